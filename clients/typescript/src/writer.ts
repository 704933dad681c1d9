// How WorkspacedStore writes memory items: one PUT a put, or several puts
// in one POST /api/v1/memory/batch, and the coalescing of concurrent puts
// into such batches.
import type { components } from "./generated/openapi.js";
import type { WorkspacedClient } from "./client.js";
import { WorkspacedError, fromProblem } from "./errors.js";

/** A put as the batch route takes it. */
export type MemoryPut = components["schemas"]["MemoryBatchPut"];
type MemoryItem = components["schemas"]["MemoryItem"];

/** What became of one put: the item as written, or why not. */
export type Outcome = { ok: true; item: MemoryItem } | { ok: false; error: unknown };

/**
 * How concurrent puts are coalesced: while fewer than `maxInFlight` put
 * requests are in flight a put goes at once, on its own; past that it
 * waits, and when a request ends the puts waiting (up to `maxBatch`) go as
 * one batch request.
 */
export interface CoalesceOptions {
  /** How many put requests may be in flight at once (default 1: one batch at a time is the fastest, measured with 2 to 16 writers). */
  maxInFlight?: number;
  /** The most puts one request carries, 1 to 100 (default 100, the API's bound). */
  maxBatch?: number;
}

/** The default of CoalesceOptions.maxInFlight. */
export const defaultMaxInFlight = 1;
/** The API's bound on the puts of a batch request, and the default of CoalesceOptions.maxBatch. */
export const maxBatchPuts = 100;

// A caller's puts waiting to go: one put of put(), or a run of batch()'s,
// which goes whole in one request.
interface Unit {
  puts: MemoryPut[];
  keys: string[];
  settle: (out: Outcome[]) => void;
}

/**
 * MemoryWriter sends a store's puts. Without coalescing each put is its
 * own PUT and write() sends its puts in batch requests of maxBatch. With
 * it every put waits its turn as CoalesceOptions says; puts of one key go
 * in the order they were given, never two requests of one key in flight at
 * once. Either way:
 * - a batch refused whole with 413, or with 400 (nothing was written),
 *   sends its puts again one by one, so that each gets its own answer;
 * - a server without the batch route (404 or 405) is remembered: from then
 *   on every put goes on its own;
 * - any other failure of a request is the outcome of each of its puts.
 */
export class MemoryWriter {
  readonly #client: WorkspacedClient;
  readonly #coalesce: boolean;
  readonly #maxInFlight: number;
  readonly #maxBatch: number;
  #noBatch = false;
  #inFlight = 0;
  #queue: Unit[] = [];
  // The keys of the puts in flight, each with how many requests carry it.
  readonly #busy = new Map<string, number>();

  constructor(client: WorkspacedClient, coalesce: false | CoalesceOptions | undefined) {
    this.#client = client;
    this.#coalesce = coalesce !== false;
    const o = coalesce || {};
    this.#maxInFlight = o.maxInFlight ?? defaultMaxInFlight;
    this.#maxBatch = o.maxBatch ?? maxBatchPuts;
    if (!Number.isInteger(this.#maxInFlight) || this.#maxInFlight < 1) {
      throw new TypeError(`WorkspacedStore: coalesce.maxInFlight must be a whole number of 1 or more (got ${JSON.stringify(o.maxInFlight)})`);
    }
    if (!Number.isInteger(this.#maxBatch) || this.#maxBatch < 1 || this.#maxBatch > maxBatchPuts) {
      throw new TypeError(`WorkspacedStore: coalesce.maxBatch must be a whole number from 1 to ${maxBatchPuts} (got ${JSON.stringify(o.maxBatch)})`);
    }
  }

  /** Whether the server was found without the batch route: every put goes on its own. */
  get singlePuts(): boolean {
    return this.#noBatch;
  }

  /** put writes one item and answers it as written, or rejects as a single PUT would. */
  async put(p: MemoryPut): Promise<MemoryItem> {
    if (!this.#coalesce) return this.#single(p);
    const key = keyOf(p);
    if (this.#queue.length === 0 && this.#inFlight < this.#maxInFlight && !this.#busy.has(key)) {
      // Nothing waits and a request may start: the put goes at once, on
      // its own (what #pump would do, without its bookkeeping).
      this.#take([key]);
      try {
        return await this.#single(p);
      } finally {
        this.#release([key], false);
      }
    }
    const [out] = await new Promise<Outcome[]>((settle) => this.#enqueue({ puts: [p], keys: [key], settle }));
    if (!out.ok) throw out.error;
    return out.item;
  }

  /**
   * write writes puts in their order, each put's outcome in its place:
   * in batch requests of maxBatch puts (one after another), waiting their
   * turn among concurrent puts when coalescing.
   */
  async write(puts: MemoryPut[]): Promise<Outcome[]> {
    const out: Outcome[] = [];
    for (let i = 0; i < puts.length; i += this.#maxBatch) {
      const chunk = puts.slice(i, i + this.#maxBatch);
      out.push(
        ...(this.#coalesce
          ? await new Promise<Outcome[]>((settle) => this.#enqueue({ puts: chunk, keys: chunk.map(keyOf), settle }))
          : await this.#send(chunk)),
      );
    }
    return out;
  }

  #enqueue(u: Unit): void {
    this.#queue.push(u);
    this.#pump();
  }

  // pump sends what may go: while a request may start, the units waiting,
  // in order, that fit in one request and have no key in flight (nor one of
  // a unit left waiting before them: a key's puts never overtake).
  #pump(): void {
    while (this.#inFlight < this.#maxInFlight && this.#queue.length > 0) {
      const limit = this.#noBatch ? 1 : this.#maxBatch;
      const blocked = new Set(this.#busy.keys());
      const take: Unit[] = [];
      const rest: Unit[] = [];
      let n = 0;
      let i = 0;
      for (; i < this.#queue.length && n < limit; i++) {
        const u = this.#queue[i];
        if ((take.length === 0 || n + u.puts.length <= limit) && !u.keys.some((k) => blocked.has(k))) {
          take.push(u);
          n += u.puts.length;
        } else {
          rest.push(u);
          for (const k of u.keys) blocked.add(k);
        }
      }
      if (take.length === 0) return;
      this.#queue = rest.concat(this.#queue.slice(i));
      void this.#fly(take);
    }
  }

  async #fly(units: Unit[]): Promise<void> {
    const keys = units.flatMap((u) => u.keys);
    this.#take(keys);
    let out: Outcome[];
    try {
      out = await this.#send(units.flatMap((u) => u.puts));
    } catch (error) {
      out = units.flatMap((u) => u.puts.map((): Outcome => ({ ok: false, error })));
    }
    this.#release(keys, units.length > 1);
    let at = 0;
    for (const u of units) {
      u.settle(out.slice(at, at + u.puts.length));
      at += u.puts.length;
    }
  }

  // take counts a request in flight with the keys of its puts.
  #take(keys: string[]): void {
    this.#inFlight++;
    for (const k of keys) this.#busy.set(k, (this.#busy.get(k) ?? 0) + 1);
  }

  // release ends a request taken with keys, which carried several callers'
  // puts or not. Under contention (puts waiting, or several callers) its
  // place is kept until the microtask queue is empty: the callers it
  // answers put again only after some turns of it, and their next puts
  // then go in one request with those that waited. Otherwise the place is
  // free at once: a lone caller's next put goes at once.
  #release(keys: string[], several: boolean): void {
    for (const k of keys) {
      const c = this.#busy.get(k)! - 1;
      if (c === 0) this.#busy.delete(k);
      else this.#busy.set(k, c);
    }
    if (this.#queue.length === 0 && !several) {
      this.#inFlight--;
      return;
    }
    later(() => {
      this.#inFlight--;
      this.#pump();
    });
  }

  // send sends puts in one request (one PUT for one put), and their
  // outcomes; it never rejects.
  async #send(puts: MemoryPut[]): Promise<Outcome[]> {
    if (puts.length === 1 || this.#noBatch) return this.#oneByOne(puts);
    let results: components["schemas"]["MemoryBatchResult"][];
    try {
      results = (await this.#client.putMemoryItems({ body: { puts } })).results;
    } catch (error) {
      if (error instanceof WorkspacedError) {
        if (error.status === 404 || error.status === 405) {
          this.#noBatch = true;
          return this.#oneByOne(puts);
        }
        if (error.status === 413 || error.status === 400) return this.#oneByOne(puts);
      }
      return puts.map((): Outcome => ({ ok: false, error }));
    }
    if (!Array.isArray(results) || results.length !== puts.length) {
      const error = new WorkspacedError({
        status: 200,
        kind: "unknown",
        detail: `POST /api/v1/memory/batch: ${Array.isArray(results) ? results.length : "no"} results for ${puts.length} puts`,
        hint: "the server broke the batch route's contract (one result per put): is it a workspaced API of this version?",
      });
      return puts.map((): Outcome => ({ ok: false, error }));
    }
    return results.map((r): Outcome => (r.status === 200 && r.item ? { ok: true, item: r.item } : { ok: false, error: fromProblem(r.status, r.problem) }));
  }

  async #oneByOne(puts: MemoryPut[]): Promise<Outcome[]> {
    const out: Outcome[] = [];
    for (const p of puts) {
      try {
        out.push({ ok: true, item: await this.#single(p) });
      } catch (error) {
        out.push({ ok: false, error });
      }
    }
    return out;
  }

  #single(p: MemoryPut): Promise<MemoryItem> {
    const header: Record<string, string> = {};
    if (p.if_version !== undefined) header["If-Match"] = `"${p.if_version}"`;
    if (p.if_absent) header["If-None-Match"] = "*";
    return this.#client.putMemoryItem({
      query: { namespace: p.namespace, key: p.key },
      header,
      body: p.ttl_seconds === undefined ? { value: p.value } : { value: p.value, ttl_seconds: p.ttl_seconds },
    });
  }
}

// later runs f once the microtask queue is empty: setImmediate where
// there is one (Node, Bun), else a zero timeout.
const later: (f: () => void) => void =
  typeof (globalThis as { setImmediate?: unknown }).setImmediate === "function"
    ? (f) => void (globalThis as unknown as { setImmediate: (f: () => void) => unknown }).setImmediate(f)
    : (f) => void setTimeout(f, 0);

// keyOf names an item: its namespace and key.
function keyOf(p: MemoryPut): string {
  return JSON.stringify([p.namespace, p.key]);
}
