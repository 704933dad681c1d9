// @workspaced/client: the workspace's HTTP API v1 from TypeScript.
// WorkspacedStore, the LangGraph.js store, is in @workspaced/client/langgraph
// (it extends @langchain/langgraph-checkpoint's BaseStore, so importing it
// needs that package); this entry needs nothing but fetch.
export { WorkspacedClient } from "./client.js";
export type { ClientOptions, OperationArgs, OperationId, OperationResult, Operations, TaskEvent } from "./client.js";
export { WorkspacedError } from "./errors.js";
export type { ErrorKind, Problem } from "./errors.js";
export { WorkspacedSession } from "./session.js";
export type { SessionOptions } from "./session.js";
export type { components, operations, paths } from "./generated/openapi.js";
