/**
 * Test kit for OpenAI-compatible adapters: wire fixtures (files in the formats the servers
 * really use, and builders), a fake `node:http` server that plays them back on 127.0.0.1 and
 * records what it was sent, and a generator of large realistic responses in each server's
 * dialect, for benchmarks.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as FakeServer from "./FakeServer.ts"
/** @since 0.1.0 */
export * as Fixture from "./Fixture.ts"
/** @since 0.1.0 */
export * as Synthetic from "./Synthetic.ts"
