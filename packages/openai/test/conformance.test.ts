/**
 * The model seam's conformance kit, run against the adapter with every shipped profile,
 * talking to the fake server on 127.0.0.1: every fixture with an expectation is a case (its
 * last user message names the fixture the server answers with; what it must give is the
 * fixture's expectation for the profile's quirks), plus the interruption check with the
 * endless fixture, whose probe proves the server saw the connection close.
 */
import { Profiles } from "@dsh/openai"
import { FakeServer, Fixture } from "@dsh/openai/testing"
import { Message, ModelRequest } from "@dsh/llm"
import * as Conformance from "@dsh/model/Conformance"
import { Effect, Layer } from "effect"
import { byName, mismatch, modelLayer, modelOf, quirksOf } from "./util.ts"

for (const profile of Profiles.names) {
  // The kit builds the Layer afresh for each test; the probe reads the server of the current one.
  let current: FakeServer.FakeServer | undefined

  const layer = Layer.unwrap(Effect.gen(function*() {
    const server = yield* FakeServer.make(byName)
    current = server
    // short, for the stall fixture (the server holds the connection), but long enough that a
    // loaded machine's pause between two writes of another fixture is not taken for one
    return modelLayer(profile, server.url, { idleTimeout: "1 second" })
  }))

  const model = modelOf(profile)
  const cases = Fixture.names().flatMap((name): ReadonlyArray<Conformance.Case> => {
    const wanted = Fixture.expectFor(Fixture.load(name), quirksOf(profile))
    if (wanted === undefined) return []
    return [{
      name,
      request: ModelRequest.make(model, [Message.user(name)]),
      expect: (outcome) => mismatch(outcome, wanted)
    }]
  })

  Conformance.suite({
    name: `${profile} profile (fake server on 127.0.0.1)`,
    layer,
    cases,
    endless: ModelRequest.make(model, [Message.user("endless")]),
    interruptWithin: "2 seconds",
    afterInterrupt: Effect.suspend(() =>
      current === undefined ? Effect.fail("no server was started") : current.awaitClosedEarly(0)
    )
  })
}
