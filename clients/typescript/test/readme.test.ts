// The README's LangGraph and Agents examples are the files the tests run
// (examples/), as a user writes them: importing @workspaced/client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

const at = (p: string) => new URL(`../../${p}`, import.meta.url);

test("the README shows examples/langgraph.ts and examples/agents.ts as they are", async () => {
  const readme = await readFile(at("README.md"), "utf8");
  for (const f of ["examples/langgraph.ts", "examples/agents.ts"]) {
    const code = (await readFile(at(f), "utf8"))
      .replaceAll('"../src/index.js"', '"@workspaced/client"')
      .replaceAll('"../src/langgraph.js"', '"@workspaced/client/langgraph"');
    assert.ok(readme.includes("```ts\n" + code + "```"), `README.md lacks ${f} as it is (with @workspaced/client imports)`);
  }
});
