// @ts-check
// dependency-cruiser configuration: the import-direction gate of the monorepo.
// Run by `npm run deps:check` (see docs/adr/0004-dependency-direction-check.md).
//
// The layering itself is NOT written here: it lives in scripts/layers.mjs (the single source of
// truth) and the layer rules below are generated from it. That file is an ES module without
// top-level await; it is loaded with a synchronous require() of an ES module (Node >= 22.12,
// the project needs >= 22.19 anyway).
//
// Rule names, as they appear in reports:
//   layer-<pkg>            <pkg> imports a package of its own or of a higher layer
//   no-loop-outside-apps   something other than an apps package imports the loop package
//                          (the apps -- cli, examples -- are the composition root and are the ONLY
//                          importers of the loop; everything else programs against the agent layer)
//   unknown-package        a module in a directory of packages/ that is not in the layer table
//   no-cross-package-relative
//                          a relative import that reaches into another package's files: import
//                          `@dsh/<name>` (its public entry points) instead
//   no-dsh-outside-workspace
//                          an @dsh/* import resolved to somewhere other than packages/<name>
//   no-effect-schema       an import of @effect/schema (Effect 3); Schema comes from "effect"
//   no-circular            a dependency cycle
//   not-to-unresolvable    an import that does not resolve (typo, missing export, missing package)

/** @type {typeof import("./scripts/layers.mjs")} */
const { LAYERS, ALL_PACKAGES, LOOP_PACKAGE, APPS_LAYER, SCOPE, forbiddenTargetsOf, mayDependOn } = require("./scripts/layers.mjs")

/** @param {string} s */
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Regex alternation group matching any of the package names. @param {readonly string[]} names */
const group = (names) => `(${names.map(escapeRegExp).join("|")})`

const scope = escapeRegExp(SCOPE)

/**
 * Paths (relative to the base dir) of modules of the given packages: their sources under
 * packages/<name>/, and, should an @dsh import ever resolve to an installed copy instead of the
 * workspace symlink, node_modules/@dsh/<name>/.
 * @param {readonly string[]} names
 */
const pathsOf = (names) => [`^packages/${group(names)}/`, `(^|/)node_modules/${scope}/${group(names)}/`]

const appsLayer = LAYERS.find((layer) => layer.name === APPS_LAYER)
if (appsLayer === undefined) throw new Error(`layers.mjs has no "${APPS_LAYER}" layer`)
const appsPackages = appsLayer.packages

/** @type {import("dependency-cruiser").IForbiddenRuleType[]} */
const layerRules = LAYERS.flatMap((layer, index) =>
  layer.packages.flatMap((pkg) => {
    // imports of the loop are reported by no-loop-outside-apps (one rule per violation)
    const targets = forbiddenTargetsOf(pkg).filter((to) => to !== LOOP_PACKAGE)
    if (targets.length === 0) return []
    const lower = LAYERS.slice(0, index).flatMap((l) => l.packages).filter((p) => mayDependOn(pkg, p))
    return [
      {
        name: `layer-${pkg}`,
        severity: /** @type {const} */ ("error"),
        comment:
          `${SCOPE}/${pkg} is in layer ${index} "${layer.name}" and may import only packages of strictly lower ` +
          `layers (${lower.length > 0 ? lower.map((p) => `${SCOPE}/${p}`).join(", ") : "none"}). ` +
          `The layer table is scripts/layers.mjs.`,
        from: { path: `^packages/${escapeRegExp(pkg)}/` },
        to: { path: pathsOf(targets) }
      }
    ]
  })
)

/** @type {import("dependency-cruiser").IForbiddenRuleType[]} */
const forbidden = [
  ...layerRules,
  {
    name: "no-loop-outside-apps",
    severity: "error",
    comment:
      `Only the apps layer (${appsPackages.map((p) => `${SCOPE}/${p}`).join(", ")}) -- the composition root -- may ` +
      `import ${SCOPE}/${LOOP_PACKAGE}. Everything else programs against the agent layer.`,
    from: { path: "^packages/", pathNot: `^packages/${group([LOOP_PACKAGE, ...appsPackages])}/` },
    to: { path: pathsOf([LOOP_PACKAGE]) }
  },
  // unknown-package: three rules so that every module of an unlisted package is caught, whether it
  // has dependencies, is depended upon, or neither (an orphan).
  {
    name: "unknown-package",
    severity: "error",
    comment: "This directory of packages/ is not in the layer table: add it to a layer in scripts/layers.mjs.",
    from: { path: "^packages/[^/]+/", pathNot: `^packages/${group(ALL_PACKAGES)}/` },
    to: {}
  },
  {
    name: "unknown-package",
    severity: "error",
    comment: "This directory of packages/ is not in the layer table: add it to a layer in scripts/layers.mjs.",
    from: {},
    to: { path: "^packages/[^/]+/", pathNot: `^packages/${group(ALL_PACKAGES)}/` }
  },
  {
    name: "unknown-package",
    severity: "error",
    comment: "This directory of packages/ is not in the layer table: add it to a layer in scripts/layers.mjs.",
    from: { orphan: true, path: "^packages/[^/]+/", pathNot: `^packages/${group(ALL_PACKAGES)}/` },
    to: {}
  },
  {
    name: "no-cross-package-relative",
    severity: "error",
    comment:
      `A relative import reaches into another package's files. Import ${SCOPE}/<name> (its package.json ` +
      `"exports") instead, so the layer rules and the published package see the same dependency.`,
    from: { path: "^packages/([^/]+)/" },
    to: { path: "^packages/", pathNot: "^packages/$1/", dependencyTypes: ["local"] }
  },
  {
    name: "no-dsh-outside-workspace",
    severity: "error",
    comment: `${SCOPE}/* must resolve (through the npm workspace symlink) to packages/<name>/; run npm install.`,
    from: {},
    to: { path: `(^|/)node_modules/${scope}/` }
  },
  {
    name: "no-effect-schema",
    severity: "error",
    comment: 'Effect 4: import Schema from "effect"; @effect/schema is the Effect 3 package (docs/adr/0001-effect-4-and-node-22.md).',
    from: {},
    to: { path: "(^|/)node_modules/@effect/schema/" }
  },
  {
    name: "no-circular",
    severity: "error",
    comment: "Circular dependency.",
    from: {},
    to: { circular: true }
  },
  {
    name: "not-to-unresolvable",
    severity: "error",
    comment: "This import does not resolve to a file (typo, missing package, or a path its package.json does not export).",
    from: {},
    to: { couldNotResolve: true }
  }
]

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden,
  options: {
    // TypeScript 7 has no JS compiler API: parse with swc (@swc/core devDependency).
    parser: "swc",
    // type-only imports are dependencies too
    tsPreCompilationDeps: true,
    doNotFollow: { path: "(^|/)node_modules/" },
    // the publishable build (npm run build) is output, not source
    exclude: { path: "(^|/)packages/[^/]+/dist/" },
    // Packages' package.json "exports" point at ./src/*.ts under the @dsh/source condition
    // (ADR 0017), so @dsh/x resolves through the workspace symlink node_modules/@dsh/x to
    // packages/x/src/...
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["@dsh/source", "import", "default"],
      extensions: [".ts", ".js", ".mjs"]
    }
  }
}
