// One behavioural suite, two Layers: the session-store contract (contract/suite.ts) run against
// the JSONL store of @dsh/session and the PostgreSQL store of this package (contract/stores.ts).
import { jsonl, postgres } from "./contract/stores.ts"
import { storeContract } from "./contract/suite.ts"

storeContract(jsonl)
storeContract(postgres)
