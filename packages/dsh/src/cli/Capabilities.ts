/**
 * The tools `--tools` and `--mcp` ask for, as a Layer registering them into the tool registry.
 *
 * - `--tools none`: no tools.
 * - `--tools coding`: bash (`@dsh/bash`: `bash`, background jobs) and the file tools
 *   (`@dsh/files`: `read`, `write`, `edit`, `list`, `glob`, `search`) on the working directory,
 *   under the permission policy that asks before writes and commands
 *   (`Policy.askBeforeChanges` of `@dsh/permissions`). Who is asked is the command's
 *   `PermissionPrompt`: the user in chat (y / n / always), nobody in `dsh run` (so asking is
 *   refusing, `TOOL_DENIED`) unless `--yes` approves everything.
 *
 * @since 0.1.0
 */
import { BashLocal, BashTools } from "@dsh/bash"
import { Files } from "@dsh/files"
import { PermissionPrompt, Permissions, Policy } from "@dsh/permissions"
import type { ToolRegistry } from "@dsh/tools"
import { Effect, Layer } from "effect"
import type * as Config from "./Config.ts"
import { ConfigInvalidError } from "./ConfigInvalidError.ts"

/**
 * A prompt that approves every question (`--yes`).
 *
 * @since 0.1.0
 * @category layers
 */
export const approveAll: Layer.Layer<PermissionPrompt.PermissionPrompt> = PermissionPrompt.layer(() => Effect.succeed("yes"))

/**
 * The coding tools on a workspace root, under the default policy asking `prompt` (nobody
 * without one).
 *
 * @since 0.1.0
 * @category layers
 */
export const coding = (root: string, prompt: Layer.Layer<PermissionPrompt.PermissionPrompt> | undefined) => {
  const permissions = Permissions.layer(Policy.askBeforeChanges, { root })
  return Layer.mergeAll(
    Files.layer({ root }),
    BashTools.layer.pipe(Layer.provide(BashLocal.layerWith({ cwd: root }))),
    prompt === undefined ? permissions : permissions.pipe(Layer.provide(prompt))
  )
}

/**
 * The capabilities of the settings; `prompt` answers the permission policy's questions
 * (`--yes` answers them all `yes` whatever it is).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  settings: Config.Settings,
  prompt: Layer.Layer<PermissionPrompt.PermissionPrompt> | undefined
) => {
  const tools = settings.tools === "coding" ? coding(process.cwd(), settings.yes ? approveAll : prompt) : Layer.empty
  const mcp: Layer.Layer<never, ConfigInvalidError, ToolRegistry> = settings.mcp === undefined ? Layer.empty : Layer.effectDiscard(Effect.fail(
    new ConfigInvalidError({
      message: "--mcp: MCP servers (@dsh/mcp) are not in this build of dsh yet",
      field: "mcp",
      source: "--mcp"
    })
  ))
  return Layer.mergeAll(tools, mcp)
}
