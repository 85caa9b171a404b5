// Starts the firecrawl-mcp server over stdio, as an MCP host does, and calls its tools in order.
//
//   FIRECRAWL_API_URL=http://127.0.0.1:PORT FIRECRAWL_API_KEY=spy_... \
//     node firecrawl_mcp.mjs '[{"name": "firecrawl_scrape", "arguments": {"url": "..."}}]'
//
// The server gets only its self-hosted settings (FIRECRAWL_API_URL, and FIRECRAWL_API_KEY when
// set) on top of the MCP SDK's default environment. The last line of stdout is JSON:
// {"tools": [names], "calls": [{"isError", "text", "structured"} or {"thrown": message}]}.
import { createRequire } from "node:module";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const require = createRequire(import.meta.url);
const server = path.join(path.dirname(require.resolve("firecrawl-mcp/package.json")), "dist/index.js");
const calls = JSON.parse(process.argv[2] ?? "[]");
const timeout = Number(process.env.MCP_CALL_TIMEOUT_MS ?? 120000);

const env = { FIRECRAWL_API_URL: process.env.FIRECRAWL_API_URL };
if (process.env.FIRECRAWL_API_KEY) env.FIRECRAWL_API_KEY = process.env.FIRECRAWL_API_KEY;

const transport = new StdioClientTransport({ command: process.execPath, args: [server], env });
const client = new Client({ name: "scrapespy-tests", version: "1.0.0" });

function answered(result) {
  return {
    isError: result.isError === true,
    text: (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
    structured: result.structuredContent ?? null,
  };
}

const answer = { tools: [], calls: [] };
try {
  await client.connect(transport, { timeout });
  answer.tools = (await client.listTools(undefined, { timeout })).tools.map((tool) => tool.name);
  for (const call of calls) {
    try {
      answer.calls.push(answered(await client.callTool(call, undefined, { timeout })));
    } catch (err) {
      answer.calls.push({ thrown: err?.message ?? String(err) });
    }
  }
} finally {
  await client.close();
}
process.stdout.write("\n" + JSON.stringify(answer) + "\n");
