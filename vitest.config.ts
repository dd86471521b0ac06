import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "scripts/test/**/*.test.ts"],
    testTimeout: 30_000,
    pool: "forks",
    // logs "dsh tests on node vX (path)" and fails below package.json engines.node (>= 22.19)
    globalSetup: ["scripts/vitest-global-setup.ts"]
  }
})
