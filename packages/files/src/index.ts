/**
 * dsh file capability: read, write, edit, list, glob and search tools confined to a workspace root
 *
 * @since 0.1.0
 */
export {}
