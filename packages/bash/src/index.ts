/**
 * dsh bash capability: the Bash service (commands, background jobs), its local implementation on effect/process, and the model-facing bash tools
 *
 * @since 0.1.0
 */
export {}
