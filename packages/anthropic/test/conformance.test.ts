/**
 * The model seam's conformance kit, run against the Anthropic adapter talking to the fake
 * server on 127.0.0.1: every fixture with an expectation is a case (its last user message
 * names the fixture the server answers with), plus the interruption check with the endless
 * fixture, whose probe proves the server saw the connection close.
 */
import { FakeServer, Fixture } from "@dsh/anthropic/testing"
import { Message, ModelRequest } from "@dsh/llm"
import * as Conformance from "@dsh/model/Conformance"
import { Effect, Layer } from "effect"
import { byName, mismatch, modelLayer } from "./util.ts"

// The kit builds the Layer afresh for each test; the probe reads the server of the current one.
let current: FakeServer.FakeServer | undefined

const layer = Layer.unwrap(Effect.gen(function*() {
  const server = yield* FakeServer.make(byName)
  current = server
  // short, for the stall fixture (the server holds the connection); the other fixtures write
  // without pauses
  return modelLayer(server.url, { idleTimeout: "200 millis" })
}))

const cases = Fixture.names().flatMap((name): ReadonlyArray<Conformance.Case> => {
  const wanted = Fixture.load(name).expect
  if (wanted === undefined) return []
  return [{
    name,
    request: ModelRequest.make("claude-sonnet-5-5", [Message.user(name)]),
    expect: (outcome) => mismatch(outcome, wanted)
  }]
})

Conformance.suite({
  name: "anthropic (fake server on 127.0.0.1)",
  layer,
  cases,
  endless: ModelRequest.make("claude-haiku-4-5", [Message.user("endless")]),
  interruptWithin: "2 seconds",
  afterInterrupt: Effect.suspend(() =>
    current === undefined ? Effect.fail("no server was started") : current.awaitClosedEarly(0)
  )
})
