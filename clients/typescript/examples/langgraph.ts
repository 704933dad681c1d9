import { Annotation, END, MemorySaver, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";
import type { BaseStore } from "@langchain/langgraph-checkpoint";

// A graph whose nodes remember what a user says, in the store, and recall
// everything remembered about that user by any thread.
const State = Annotation.Root({
  user: Annotation<string>,
  said: Annotation<string>,
  recalled: Annotation<string[]>,
});

export function rememberingGraph(store: BaseStore) {
  return new StateGraph(State)
    .addNode("remember", async (state: typeof State.State, config: LangGraphRunnableConfig) => {
      const thread = config.configurable?.thread_id as string;
      const n = (await config.store!.search(["users", state.user, "memories"], { limit: 1000 })).length;
      await config.store!.put(["users", state.user, "memories"], `${thread}.${n}`, { text: state.said, thread });
      return {};
    })
    .addNode("recall", async (state: typeof State.State, config: LangGraphRunnableConfig) => {
      const memories = await config.store!.search(["users", state.user, "memories"], { limit: 1000 });
      return { recalled: memories.map((m) => `${m.value.thread}: ${m.value.text}`) };
    })
    .addEdge(START, "remember")
    .addEdge("remember", "recall")
    .addEdge("recall", END)
    .compile({ store, checkpointer: new MemorySaver() });
}
