import { Agent, run, type Model } from "@openai/agents-core";
import { WorkspacedClient, WorkspacedSession } from "../src/index.js";

// An agent whose conversation is kept in the workspace: a thread's session
// entries. Any process with the same task and thread picks it up.
export async function converse(client: WorkspacedClient, task: string, model: Model, says: string[]) {
  const agent = new Agent({ name: "assistant", instructions: "Answer briefly.", model });
  const session = new WorkspacedSession({ client, task });
  const answers: string[] = [];
  for (const text of says) {
    const result = await run(agent, text, { session });
    answers.push(String(result.finalOutput));
  }
  return answers;
}
