/**
 * dsh model adapter for Anthropic's Messages API over effect/http and SSE, with a fake server and wire fixtures for testing
 *
 * @since 0.1.0
 */
export {}
