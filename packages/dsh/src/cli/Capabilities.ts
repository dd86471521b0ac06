/**
 * The tools `--tools` and `--mcp` ask for, as a Layer registering them into the tool registry.
 *
 * - `--tools none`: no tools of its own.
 * - `--tools coding`: bash (`@dsh/bash`: `bash`, background jobs) and the file tools
 *   (`@dsh/files`: `read`, `write`, `edit`, `list`, `glob`, `search`) on the working directory,
 *   under the permission policy that asks before writes and commands
 *   (`Policy.askBeforeChanges` of `@dsh/permissions`). Who is asked is the command's
 *   `PermissionPrompt`: the user in chat (y / n / always), nobody in `dsh run` (so asking is
 *   refusing, `TOOL_DENIED`) unless `--yes` approves everything.
 * - `--mcp <file>` (or the config file's `mcp`): the tools of the MCP servers the file names
 *   (see `McpConfig`), named `<server>__<tool>`, under the same policy (it asks before every
 *   MCP tool).
 *
 * @since 0.1.0
 */
import { BashLocal, BashTools } from "@dsh/bash"
import { Files } from "@dsh/files"
import { PermissionPrompt, Permissions, Policy } from "@dsh/permissions"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Config from "./Config.ts"
import * as McpConfig from "./McpConfig.ts"

/**
 * A prompt that approves every question (`--yes`).
 *
 * @since 0.1.0
 * @category layers
 */
export const approveAll: Layer.Layer<PermissionPrompt.PermissionPrompt> = PermissionPrompt.layer(() => Effect.succeed("yes"))

/**
 * The coding tools on a workspace root: the file tools and bash.
 *
 * @since 0.1.0
 * @category layers
 */
export const coding = (root: string) =>
  Layer.mergeAll(Files.layer({ root }), BashTools.layer.pipe(Layer.provide(BashLocal.layerWith({ cwd: root }))))

/**
 * The tools of the MCP servers a `--mcp` file names; `source` is where it was named (`--mcp`,
 * or the config file's `mcp` field), which a failure to read it names.
 *
 * @since 0.1.0
 * @category layers
 */
export const mcp = (file: string, source: McpConfig.Source = "--mcp") =>
  // @dsh/mcp (and effect/ai's MCP client under it) is loaded only when servers are named
  Layer.unwrap(
    Effect.flatMap(Effect.promise(() => import("@dsh/mcp")), ({ Mcp, McpNames }) =>
      Effect.map(McpConfig.read(file, source, McpNames.serverNameProblem), (config) => Mcp.layer({ servers: McpConfig.servers(config) })))
  ).pipe(
    Layer.provide(NodeFileSystem.layer)
  )

/**
 * The permission policy of the settings — the config file's rules, then the built-in ones that
 * ask before writes, commands and MCP tools — asking `prompt` (nobody without one: then asking
 * is refusing).
 *
 * @since 0.1.0
 * @category layers
 */
export const permissions = (
  root: string,
  config: Policy.Config,
  prompt: Layer.Layer<PermissionPrompt.PermissionPrompt> | undefined
) => {
  const policy = Permissions.layer(config, {
    root,
    unattended: "dsh run asks no one, so it is refused: the user can allow such calls with --yes, or work in dsh chat"
  })
  return prompt === undefined ? policy : policy.pipe(Layer.provide(prompt))
}

/**
 * The capabilities of the settings on the working directory; `prompt` answers the permission
 * policy's questions (`--yes` answers them all `yes`, whatever it is).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  settings: Config.Settings,
  prompt: Layer.Layer<PermissionPrompt.PermissionPrompt> | undefined
) => {
  const root = process.cwd()
  const tools = settings.tools === "coding" ? coding(root) : Layer.empty
  const servers = settings.mcp === undefined ? Layer.empty : mcp(settings.mcp, settings.mcpSource)
  const guarded = settings.tools === "coding" || settings.mcp !== undefined
  return Layer.mergeAll(tools, servers, guarded ? permissions(root, settings.permissions, settings.yes ? approveAll : prompt) : Layer.empty)
}
