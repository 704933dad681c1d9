import type { AgentInputItem, Session } from "@openai/agents-core";
import { WorkspacedClient, type ClientOptions } from "./client.js";
import { WorkspacedError } from "./errors.js";

/** Where a WorkspacedSession keeps its items. */
export interface SessionOptions {
  /** The client to use, or the options to make one with. */
  client: WorkspacedClient | ClientOptions;
  /** The task whose thread holds the conversation. */
  task: string;
  /** The thread (default: the task's root thread, the task id itself). */
  thread?: string;
  /**
   * The prefix of the items' keys among the thread's session entries
   * (default "item."): entries without it are the thread's own and are
   * left alone.
   */
  keyPrefix?: string;
}

// An item's key is the prefix and a sequence number of 12 digits, so the
// session listing, sorted by key, is the items in the order they were added.
const digits = 12;
// The most items one listing answers (the API's bound on last).
const maxLast = 1000;

/**
 * WorkspacedSession is an OpenAI Agents JS Session (`@openai/agents-core`)
 * whose items are entries of a thread's session memory, one entry per item,
 * keyed `item.000000000001`, `item.000000000002`… in the order added.
 *
 * It is safe when several processes add to one session at once: an item is
 * written with If-None-Match: * (create only), so two writers never take
 * the same key; the one refused takes the next. No item is lost or written
 * twice, and each process's items keep their order. popItem deletes with
 * If-Match, so two processes popping at once pop two different items.
 *
 * getItems(limit) answers the latest `limit` items, oldest first, as every
 * Session does.
 */
export class WorkspacedSession implements Session {
  readonly client: WorkspacedClient;
  readonly task: string;
  readonly thread: string;
  readonly #prefix: string;
  // The sequence number after the item this session wrote last.
  #next?: number;

  constructor(options: SessionOptions) {
    if (!options?.task) throw new TypeError("WorkspacedSession needs task, the task whose thread holds the conversation");
    this.client = options.client instanceof WorkspacedClient ? options.client : new WorkspacedClient(options.client);
    this.task = options.task;
    this.thread = options.thread ?? options.task;
    this.#prefix = options.keyPrefix ?? "item.";
  }

  /** The session's id: the thread's. */
  async getSessionId(): Promise<string> {
    return this.thread;
  }

  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && limit <= 0) return [];
    // One request reads the latest items with their values; a session
    // longer than one listing answers is read whole, keys first.
    const last = limit === undefined ? maxLast : Math.min(limit, maxLast);
    const page = await this.client.listSession({
      path: { task: this.task, thread: this.thread },
      query: { prefix: this.#prefix, last, values: true },
    });
    if (page.entries.length === maxLast && (limit === undefined || limit > maxLast)) return this.#all(limit);
    return page.entries.filter((e) => this.#isItem(e.key)).map((e) => e.value as AgentInputItem);
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    // Where this session wrote last is where the next item goes, unless
    // another process wrote since: then the first refusal looks again.
    let seq = this.#next ?? (await this.#last()) + 1;
    let looked = this.#next === undefined;
    for (const item of items) {
      for (;;) {
        try {
          await this.client.putSessionEntry({
            path: { task: this.task, thread: this.thread, key: this.#key(seq) },
            header: { "If-None-Match": "*" },
            body: { value: item, short_description: describe(item) },
          });
          seq++;
          this.#next = seq;
          break;
        } catch (err) {
          // Another process took this key first: take a later one.
          if (!(err instanceof WorkspacedError && err.isPreconditionFailed)) throw err;
          seq = looked ? seq + 1 : Math.max(seq + 1, (await this.#last()) + 1);
          looked = true;
        }
      }
    }
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    for (;;) {
      const keys = await this.#keys();
      if (!keys.length) return undefined;
      const key = keys[keys.length - 1];
      const e = await this.#get(key);
      if (!e) continue; // popped by another process meanwhile
      try {
        await this.client.deleteSessionEntry({
          path: { task: this.task, thread: this.thread, key },
          header: { "If-Match": `"${e.version}"` },
        });
        return e.value as AgentInputItem;
      } catch (err) {
        if (err instanceof WorkspacedError && (err.isPreconditionFailed || err.isNotFound)) continue;
        throw err;
      }
    }
  }

  async clearSession(): Promise<void> {
    this.#next = undefined;
    for (const key of await this.#keys()) {
      try {
        await this.client.deleteSessionEntry({ path: { task: this.task, thread: this.thread, key } });
      } catch (err) {
        if (!(err instanceof WorkspacedError && err.isNotFound)) throw err;
      }
    }
  }

  // all reads the latest limit items (all of them when undefined) when
  // they are more than one listing answers: the keys, then each value.
  async #all(limit?: number): Promise<AgentInputItem[]> {
    const keys = await this.#keys();
    const want = limit === undefined ? keys : keys.slice(Math.max(keys.length - limit, 0));
    const got: AgentInputItem[] = [];
    for (const key of want) {
      const e = await this.#get(key);
      if (e) got.push(e.value as AgentInputItem);
    }
    return got;
  }

  #isItem(key: string): boolean {
    return new RegExp(`^${escape(this.#prefix)}\\d{${digits}}$`).test(key);
  }

  // last is the sequence number of the latest item (0: none).
  async #last(): Promise<number> {
    const keys = await this.#keys();
    return keys.length ? this.#seq(keys[keys.length - 1]) : 0;
  }

  // keys lists the items' keys, oldest first.
  async #keys(): Promise<string[]> {
    const list = await this.client.listSession({ path: { task: this.task, thread: this.thread } });
    return list.entries.map((m) => m.key).filter((k) => this.#isItem(k)).sort();
  }

  async #get(key: string) {
    try {
      return await this.client.getSessionEntry({ path: { task: this.task, thread: this.thread, key } });
    } catch (err) {
      if (err instanceof WorkspacedError && err.isNotFound) return undefined;
      throw err;
    }
  }

  #key(seq: number): string {
    return this.#prefix + String(seq).padStart(digits, "0");
  }

  #seq(key: string): number {
    return Number(key.slice(this.#prefix.length));
  }
}

// describe names an item in its entry's short description.
function describe(item: AgentInputItem): string {
  const it = item as { type?: string; role?: string; name?: string };
  const what = it.type ?? "message";
  if (it.role) return `${what} from ${it.role}`;
  if (it.name) return `${what} ${it.name}`;
  return what;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
