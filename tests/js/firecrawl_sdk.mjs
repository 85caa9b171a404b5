// Runs one method of @mendable/firecrawl-js against the service and prints what it gave back.
//
//   FIRECRAWL_API_URL=http://127.0.0.1:PORT FIRECRAWL_API_KEY=spy_... \
//     node firecrawl_sdk.mjs '{"method": "scrape", "args": ["http://127.0.0.1:PORT/article"]}'
//
// The client is built as a user builds it: new Firecrawl({apiKey, apiUrl}). The last line of
// stdout is JSON: {"result": ...} when the method resolved, {"error": {...}} when it threw (with
// the SDK's own class, status and code, as a program catching it would see them).
import Firecrawl, { SdkError } from "@mendable/firecrawl-js";

const call = JSON.parse(process.argv[2] ?? "{}");
const firecrawl = new Firecrawl({
  apiKey: process.env.FIRECRAWL_API_KEY,
  apiUrl: process.env.FIRECRAWL_API_URL,
  timeoutMs: Number(process.env.FIRECRAWL_TIMEOUT_MS ?? 120000),
});

function thrown(err) {
  return {
    class: err?.constructor?.name ?? typeof err,
    isSdkError: err instanceof SdkError,
    name: err?.name,
    message: err?.message ?? String(err),
    status: err?.status ?? null,
    code: err?.code ?? null,
  };
}

let answer;
try {
  answer = { result: await firecrawl[call.method](...(call.args ?? [])) };
} catch (err) {
  answer = { error: thrown(err) };
}
process.stdout.write("\n" + JSON.stringify(answer) + "\n");
