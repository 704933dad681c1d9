import type { components } from "./generated/openapi.js";
import type { Answer } from "./transport.js";

/** A problem document of the API (RFC 9457), as the server sends it. */
export type Problem = components["schemas"]["Problem"];

/** The kinds of error the API names in a problem's `kind`. */
export type ErrorKind = Problem["kind"];

/**
 * WorkspacedError is every error the API answers, and every request that
 * got no answer: `kind` is the server's error kind (the CLI's), `status` the
 * HTTP status (0 when the request never got one), `hint` how to fix it when
 * the server knows, and `currentVersion` the version stored now on a failed
 * compare-and-set (412). Its message is the detail, then the hint on a line
 * of its own, as the CLI prints them.
 */
export class WorkspacedError extends Error {
  readonly status: number;
  readonly kind: ErrorKind | "network" | "unknown";
  readonly detail: string;
  readonly hint?: string;
  readonly field?: string;
  readonly currentVersion?: number;
  /** The problem document, when the server sent one. */
  readonly problem?: Problem;

  constructor(init: {
    status: number;
    kind: WorkspacedError["kind"];
    detail: string;
    hint?: string;
    field?: string;
    currentVersion?: number;
    problem?: Problem;
    cause?: unknown;
  }) {
    super(init.hint ? `${init.detail}\nhint: ${init.hint}` : init.detail, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "WorkspacedError";
    this.status = init.status;
    this.kind = init.kind;
    this.detail = init.detail;
    this.hint = init.hint;
    this.field = init.field;
    this.currentVersion = init.currentVersion;
    this.problem = init.problem;
  }

  /** Whether a compare-and-set failed (If-Match or If-None-Match: 412). */
  get isPreconditionFailed(): boolean {
    return this.status === 412;
  }

  /** Whether the thing asked for does not exist (404). */
  get isNotFound(): boolean {
    return this.status === 404;
  }
}

/**
 * problemError makes the error of a response that failed: from its
 * problem+json body when it has one, else from its status and text.
 */
export async function problemError(method: string, url: string, res: Answer): Promise<WorkspacedError> {
  const text = await res.text().catch(() => "");
  const type = res.header("content-type") ?? "";
  if (type.startsWith("application/problem+json") || type.startsWith("application/json")) {
    try {
      const p = JSON.parse(text) as Problem;
      if (isProblem(p)) return fromProblem(res.status, p);
    } catch {
      // not JSON after all: said below
    }
  }
  const said = text.trim().slice(0, 200);
  return new WorkspacedError({
    status: res.status,
    kind: "unknown",
    detail: `${method} ${url}: HTTP ${res.status}${said ? `: ${said}` : ""}`,
    hint: "the server did not answer with a problem document: is this URL a workspaced API (…/api/v1)?",
  });
}

function isProblem(p: unknown): p is Problem {
  const q = p as Problem | null;
  return !!q && typeof q.detail === "string" && typeof q.kind === "string";
}

/**
 * fromProblem makes the error a problem document says, answered with
 * status: a whole response's, or one result's of a batch (a put refused
 * by its compare-and-set there is the same error as a single put's 412).
 * Without a problem it says that the server sent none.
 */
export function fromProblem(status: number, p: Problem | undefined): WorkspacedError {
  if (!isProblem(p)) {
    return new WorkspacedError({
      status,
      kind: "unknown",
      detail: `a result of status ${status} without a problem document`,
      hint: "the server did not say why: is it a workspaced API (…/api/v1)?",
    });
  }
  return new WorkspacedError({
    status,
    kind: p.kind,
    detail: p.detail,
    hint: p.hint || undefined,
    field: p.field || undefined,
    currentVersion: typeof p.current_version === "number" ? p.current_version : undefined,
    problem: p,
  });
}
