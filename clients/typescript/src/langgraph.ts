// @workspaced/client/langgraph: WorkspacedStore, a LangGraph.js store over
// the workspace's memory namespaces.
import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
} from "@langchain/langgraph-checkpoint";
import type { components } from "./generated/openapi.js";
import { WorkspacedClient, type ClientOptions } from "./client.js";
import { WorkspacedError } from "./errors.js";
import { type CoalesceOptions, type MemoryPut, MemoryWriter } from "./writer.js";

export type { CoalesceOptions } from "./writer.js";

type MemoryItem = components["schemas"]["MemoryItem"];

/** An item as WorkspacedStore answers it: LangGraph's Item with its version and expiry. */
export interface WorkspacedItem extends SearchItem {
  /** 1 when created, one more at every put: what compare-and-set compares. */
  version: number;
  /** When it expires; null without a TTL. */
  expiresAt: Date | null;
}

/** How WorkspacedStore writes an item, beyond BaseStore's put. */
export interface PutOptions {
  /** Expire this many minutes after the write (PostgresStore's unit); left out: never. */
  ttl?: number;
  /** Expire this many seconds after the write (wins over ttl). */
  ttlSeconds?: number;
  /** Write only while the stored version is this one (compare-and-set). */
  ifVersion?: number;
  /** Write only when no item is there (create only). */
  ifAbsent?: boolean;
}

/** How a WorkspacedStore reaches the server, and how it sends its puts. */
export type StoreOptions = ({ client: WorkspacedClient } | ClientOptions) & {
  /**
   * Coalescing of concurrent puts into batch requests: on by default
   * (CoalesceOptions tunes it), false to send every put on its own.
   */
  coalesce?: false | CoalesceOptions;
};

/** A put in a batch, with WorkspacedStore's options. */
export interface WorkspacedPutOperation extends PutOperation {
  options?: PutOptions;
}

// The API's largest page: longer searches and listings are read in pages.
const maxPage = 1000;
// How many reads of one batch are in flight at once.
const parallelReads = 8;

/**
 * WorkspacedStore is a LangGraph.js store (`BaseStore` of
 * `@langchain/langgraph-checkpoint`) over the workspace's memory
 * namespaces, through the HTTP API: every graph, thread and process given
 * one on the same workspace shares its items, whatever store (files,
 * SQLite, PostgreSQL) the workspace is on.
 *
 * - Namespaces are compared label by label: a search under ["a", "b"]
 *   finds ["a", "b", "c"], never ["a", "bc"].
 * - search takes filter ($eq $ne $gt $gte $lt $lte on top-level fields of
 *   the value), limit and offset; it answers in the documented order,
 *   namespace label by label, then key (byte order). There is no semantic
 *   search: a search with `query` is refused with an error saying so.
 * - listNamespaces takes one prefix and one suffix (a label "*" matches any
 *   one), maxDepth, limit and offset.
 * - put takes a TTL (`ttl` in minutes as PostgresStore, or `ttlSeconds`)
 *   and compare-and-set (`ifVersion`, `ifAbsent`); a failed one rejects with
 *   a WorkspacedError whose currentVersion is the version stored now.
 *   `index` is accepted and ignored: nothing is embedded.
 * - A batch runs its operations in order (a get after a put in the same
 *   batch sees it, as in PostgresStore); consecutive reads go at once, and
 *   consecutive puts with a value as one batch request (POST
 *   /api/v1/memory/batch, 100 puts a request: one transaction on SQL
 *   stores). A put refused there rejects the batch with the error its own
 *   PUT would have; the other puts of its request are written all the same.
 * - Concurrent puts are coalesced (option `coalesce`): while fewer than
 *   maxInFlight put requests are in flight a put goes at once on its own;
 *   past that it waits, and when a request ends the waiting puts go as one
 *   batch request. Each caller's put resolves or rejects with its own
 *   result, as a single put's; puts of one key are applied in the order
 *   they were called. A server without the batch route is remembered and
 *   sent single puts.
 */
export class WorkspacedStore extends BaseStore {
  readonly client: WorkspacedClient;
  readonly #writer: MemoryWriter;

  constructor(options: StoreOptions) {
    super();
    this.client = "client" in options ? options.client : new WorkspacedClient(options);
    this.#writer = new MemoryWriter(this.client, options.coalesce);
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    for (const op of operations) check(op);
    const results: unknown[] = new Array(operations.length);
    let i = 0;
    while (i < operations.length) {
      if (isPut(operations[i])) {
        const op = operations[i] as WorkspacedPutOperation;
        if (op.value === null) {
          await this.#delete(op.namespace, op.key, op.options?.ifVersion);
          results[i++] = undefined;
          continue;
        }
        // A run of puts with a value: batch requests.
        let end = i;
        while (end < operations.length && isPut(operations[end]) && (operations[end] as PutOperation).value !== null) end++;
        const puts = operations.slice(i, end).map((o) => {
          const p = o as WorkspacedPutOperation;
          return toPut(p.namespace, p.key, p.value!, p.options);
        });
        const out = await this.#writer.write(puts);
        const failed = out.find((o) => !o.ok);
        if (failed && !failed.ok) throw failed.error;
        for (; i < end; i++) results[i] = undefined;
        continue;
      }
      // A run of reads: at most parallelReads in flight.
      let end = i;
      while (end < operations.length && !isPut(operations[end])) end++;
      let next = i;
      const work = async () => {
        while (next < end) {
          const k = next++;
          results[k] = await this.#read(operations[k]);
        }
      };
      await Promise.all(Array.from({ length: Math.min(parallelReads, end - i) }, work));
      i = end;
    }
    return results as OperationResults<Op>;
  }

  /** get answers the item with its version and expiry, or null. */
  async get(namespace: string[], key: string): Promise<WorkspacedItem | null> {
    return this.#get({ namespace, key });
  }

  /** search answers the items with their versions and expiries. */
  async search(
    namespacePrefix: string[],
    options: { filter?: Record<string, unknown>; limit?: number; offset?: number; query?: string } = {},
  ): Promise<WorkspacedItem[]> {
    const op: SearchOperation = { namespacePrefix, ...options };
    check(op);
    return this.#search(op);
  }

  /** put, with a TTL or compare-and-set. */
  async put(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    index?: false | string[],
    options?: PutOptions,
  ): Promise<void> {
    void index;
    await this.#writer.put(toPut(namespace, key, value, options));
  }

  /**
   * putItem writes an item and answers it as written (with its new
   * version): put for callers that go on with compare-and-set.
   */
  async putItem(namespace: string[], key: string, value: Record<string, unknown>, options: PutOptions = {}): Promise<WorkspacedItem> {
    return toItem(await this.#writer.put(toPut(namespace, key, value, options)));
  }

  /**
   * delete removes an item; a missing one is no error, as in every
   * LangGraph store. With ifVersion it removes it only while its version
   * is that one, and rejects otherwise (412, or 404 when it is gone).
   */
  async delete(namespace: string[], key: string, options: { ifVersion?: number } = {}): Promise<void> {
    await this.#delete(namespace, key, options.ifVersion);
  }

  async #delete(namespace: string[], key: string, ifVersion?: number): Promise<void> {
    try {
      await this.client.deleteMemoryItem({
        query: { namespace, key },
        header: ifVersion === undefined ? {} : { "If-Match": `"${ifVersion}"` },
      });
    } catch (err) {
      if (ifVersion === undefined && err instanceof WorkspacedError && err.isNotFound) return;
      throw err;
    }
  }

  async #read(op: Operation): Promise<unknown> {
    if ("namespacePrefix" in op) return this.#search(op);
    if ("matchConditions" in op || "maxDepth" in op || !("key" in op)) return this.#namespaces(op as ListNamespacesOperation);
    return this.#get(op as GetOperation);
  }

  async #get(op: GetOperation): Promise<WorkspacedItem | null> {
    try {
      return toItem(await this.client.getMemoryItem({ query: { namespace: op.namespace, key: op.key } }));
    } catch (err) {
      if (err instanceof WorkspacedError && err.isNotFound) return null;
      throw err;
    }
  }

  async #search(op: SearchOperation): Promise<WorkspacedItem[]> {
    const out: WorkspacedItem[] = [];
    let offset = op.offset ?? 0;
    let left = op.limit ?? 10;
    while (left > 0) {
      const limit = Math.min(left, maxPage);
      const page = await this.client.searchMemory({
        body: { namespace_prefix: op.namespacePrefix, filter: op.filter, limit, offset },
      });
      out.push(...page.items.map(toItem));
      if (page.items.length < limit) break;
      left -= limit;
      offset += limit;
    }
    return out;
  }

  async #namespaces(op: ListNamespacesOperation): Promise<string[][]> {
    let prefix: string[] | undefined;
    let suffix: string[] | undefined;
    for (const c of op.matchConditions ?? []) {
      if (c.matchType === "prefix") prefix = c.path;
      else suffix = c.path;
    }
    const out: string[][] = [];
    let offset = op.offset ?? 0;
    let left = op.limit ?? 100;
    while (left > 0) {
      const limit = Math.min(left, maxPage);
      const page = await this.client.listMemoryNamespaces({
        body: { prefix, suffix, max_depth: op.maxDepth, limit, offset },
      });
      out.push(...page.namespaces);
      if (page.namespaces.length < limit) break;
      left -= limit;
      offset += limit;
    }
    return out;
  }
}

// toPut is a put as the API takes it.
function toPut(namespace: string[], key: string, value: Record<string, unknown>, options: PutOptions = {}): MemoryPut {
  const p: MemoryPut = { namespace, key, value };
  const ttl = options.ttlSeconds ?? (options.ttl !== undefined ? Math.ceil(options.ttl * 60) : undefined);
  if (ttl !== undefined) p.ttl_seconds = ttl;
  if (options.ifVersion !== undefined) p.if_version = options.ifVersion;
  if (options.ifAbsent) p.if_absent = true;
  return p;
}

function isPut(op: Operation): op is PutOperation {
  return "value" in op;
}

// check refuses, before anything of the batch is done, what the store does
// not do.
function check(op: Operation): void {
  if ("namespacePrefix" in op && op.query !== undefined && op.query !== null && op.query !== "") {
    throw new WorkspacedError({
      status: 0,
      kind: "invalid",
      detail: "WorkspacedStore has no semantic search: a search with query is refused (nothing is embedded)",
      hint: "search with filter, limit and offset, and leave query out",
    });
  }
  if ("matchConditions" in op && op.matchConditions) {
    for (const t of ["prefix", "suffix"] as const) {
      if (op.matchConditions.filter((c) => c.matchType === t).length > 1) {
        throw new WorkspacedError({
          status: 0,
          kind: "invalid",
          detail: `WorkspacedStore lists namespaces by one ${t} at most, not ${op.matchConditions.filter((c) => c.matchType === t).length}`,
          hint: `give one ${t} (a label "*" matches any one label)`,
        });
      }
    }
  }
}

function toItem(m: MemoryItem): WorkspacedItem {
  return {
    namespace: m.namespace,
    key: m.key,
    value: m.value,
    createdAt: new Date(m.created_at),
    updatedAt: new Date(m.updated_at),
    version: m.version,
    expiresAt: m.expires_at ? new Date(m.expires_at) : null,
  };
}

export type { Item };
