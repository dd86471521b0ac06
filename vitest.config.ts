import { defineConfig } from "vitest/config"

// Inside the workspace @dsh/* packages resolve to their sources through the @dsh/source export
// condition (docs/adr/0017-build-and-source-condition.md): for the modules vitest loads, and,
// through NODE_OPTIONS, for the Node processes tests spawn (crash and lock children, README
// examples).
const sourceCondition = "--conditions=@dsh/source"
if (!(process.env["NODE_OPTIONS"] ?? "").includes(sourceCondition)) {
  process.env["NODE_OPTIONS"] = [process.env["NODE_OPTIONS"], sourceCondition].filter(Boolean).join(" ")
}

export default defineConfig({
  resolve: { conditions: ["@dsh/source", "module", "node", "import", "default"] },
  ssr: { resolve: { conditions: ["@dsh/source", "node", "import", "default"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts", "scripts/test/**/*.test.ts"],
    testTimeout: 30_000,
    pool: "forks",
    // logs "dsh tests on node vX (path)" and fails below package.json engines.node (>= 22.19);
    // then starts a throw-away PostgreSQL unless DSH_PG_URL names one (scripts/postgres.ts)
    globalSetup: ["scripts/vitest-global-setup.ts", "scripts/vitest-postgres-setup.ts"]
  }
})
