/**
 * dsh model wire: OpenAI-compatible chat completions over effect/http and SSE — any base URL, key and model; server profiles as data; a fake server and wire fixtures for testing
 *
 * @since 0.1.0
 */
export {}
