import { randomUUID } from 'node:crypto';
import {
  type ClockSource,
  createFaultQueue,
  createKeyStore,
  createRequestLog,
  createSandboxClock,
  isPlainObject,
  type KeyedResult,
  type LoopbackRequest,
  parseJsonBody,
  type SandboxReply as Reply,
  type Route,
  routeRequest,
  startLoopbackServer,
} from '@retrysafe/sandbox-kit';

/**
 * A loopback Resend that behaves as Resend documents its idempotency keys
 * (https://resend.com/docs/dashboard/emails/idempotency-keys, https://resend.com/docs/api-reference/errors):
 * POST /emails and POST /emails/batch keep an Idempotency-Key for 24 hours and answer the same key and
 * payload with the first answer (the same email ids, nothing sent again); the same key with another
 * payload is 409 invalid_idempotent_request; the same key while the first request still runs is 409
 * concurrent_idempotent_requests; a key outside 1–256 characters is 400 invalid_idempotency_key.
 * Only sent emails are kept under a key (the page speaks of an email "already sent"). Answers are
 * Resend's error shape `{ statusCode, name, message }`. The server, clock, key store, fault queue and
 * request log are the sandbox kit; this file keeps Resend's routes, checks and answers.
 */

export type ResendOperationName = 'emails.send' | 'batch.send';

export interface SentEmail {
  readonly id: string;
  readonly via: ResendOperationName;
  /** The batch it came in (1-based, per sandbox), or null for a single send. */
  readonly batch: number | null;
  readonly from: string;
  readonly to: readonly string[];
  readonly subject: string;
  readonly createdAt: number;
}

export interface SandboxRequest {
  readonly n: number;
  readonly method: string;
  readonly path: string;
  readonly idempotencyKey: string | null;
  status: number;
  result: KeyedResult | 'no-key' | 'refused';
}

/** An answer given at the door, before the key store: Resend's error name, status and optional Retry-After. */
export interface SandboxFault {
  readonly status: number;
  readonly name: string;
  readonly message?: string;
  readonly retryAfterS?: number;
}

export interface ResendSandboxOptions {
  readonly port?: number;
  /** The sandbox's time source (the drill's virtual clock). Default the wall clock. */
  readonly now?: ClockSource;
  /** How long keys are kept. Default 24 h, as Resend documents. */
  readonly retentionMs?: number;
}

export interface ResendSandbox {
  readonly url: string;
  /** Sends that went out: emails for `emails.send`, batches for `batch.send`; every email when omitted. */
  count(operation?: string): number;
  emails(): readonly SentEmail[];
  requests(): readonly SandboxRequest[];
  requestCount(filter?: { method?: string; path?: string }): number;
  keys(): string[];
  advance(ms: number): void;
  /** Forgets every finished key now, as if past retention. Returns how many. */
  expireKeys(): number;
  /** The next `times` POSTs are answered with `fault` at the door (not stored under a key). */
  failNext(fault: SandboxFault, times?: number): void;
  /** Holds every send that reaches execution (its key stays in progress) until the returned function is called. */
  hold(): () => void;
  /** Resolves once `predicate` holds for the request log (for tests that wait on the sandbox). */
  waitFor(predicate: (requests: readonly SandboxRequest[]) => boolean): Promise<void>;
  close(): Promise<void>;
}

export const RESEND_RETENTION_MS = 24 * 60 * 60 * 1000;

const error = (statusCode: number, name: string, message: string, headers?: Record<string, string>): Reply => ({
  status: statusCode,
  body: { statusCode, name, message },
  ...(headers ? { headers } : {}),
});

const asList = (v: unknown): string[] | null =>
  typeof v === 'string'
    ? [v]
    : Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string')
      ? (v as string[])
      : null;

/** Resend's checks on one email body; the answer names the field as Resend does, in backticks. */
function emailProblem(body: unknown, at: string): Reply | null {
  if (!isPlainObject(body)) return error(422, 'validation_error', `${at}The email must be an object.`);
  for (const field of ['from', 'to', 'subject']) {
    if (body[field] === undefined) return error(422, 'missing_required_field', `${at}Missing \`${field}\` field.`);
  }
  if (typeof body.from !== 'string' || !body.from.includes('@'))
    return error(
      422,
      'validation_error',
      `${at}Invalid \`from\` field. The email address needs to follow the \`email@example.com\` or \`Name <email@example.com>\` format.`,
    );
  const to = asList(body.to);
  if (!to || to.length > 50 || !to.every((a) => a.includes('@')))
    return error(422, 'validation_error', `${at}Invalid \`to\` field. Up to 50 addresses, each \`email@example.com\`.`);
  if (typeof body.subject !== 'string') return error(422, 'validation_error', `${at}Invalid \`subject\` field.`);
  return null;
}

function getEmail(sent: readonly SentEmail[], id: string): Reply {
  const email = sent.find((e) => e.id === id);
  return email
    ? {
        status: 200,
        body: {
          object: 'email',
          id: email.id,
          from: email.from,
          to: email.to,
          subject: email.subject,
          created_at: new Date(email.createdAt).toISOString(),
        },
      }
    : error(404, 'not_found', 'Email not found');
}

/** The answer given before routing: a missing or malformed API key, else the scripted fault; null lets the request in. */
function atTheDoor(req: LoopbackRequest, fault: SandboxFault | undefined): Reply | null {
  const auth = req.headers.authorization;
  if (typeof auth !== 'string' || !auth.startsWith('Bearer '))
    return error(401, 'missing_api_key', 'Missing API key in the authorization header.');
  if (!/^Bearer re_\S+$/.test(auth)) return error(403, 'invalid_api_key', 'API key is invalid.');
  if (fault)
    return error(
      fault.status,
      fault.name,
      fault.message ?? fault.name,
      fault.retryAfterS !== undefined ? { 'retry-after': String(fault.retryAfterS) } : undefined,
    );
  return null;
}

export async function startResendSandbox(options: ResendSandboxOptions = {}): Promise<ResendSandbox> {
  const clock = createSandboxClock(options.now, 'resend sandbox');
  const sent: SentEmail[] = [];
  let batches = 0;
  const keys = createKeyStore<undefined>({
    retentionMs: options.retentionMs ?? RESEND_RETENTION_MS,
    clock,
    answers: {
      inFlight: error(
        409,
        'concurrent_idempotent_requests',
        'Same idempotency key used while original request is still in progress.',
      ),
      mismatch: error(409, 'invalid_idempotent_request', 'Same idempotency key used with a different request payload.'),
      stores: (reply) => reply.status >= 200 && reply.status < 300,
    },
  });
  const log = createRequestLog<SandboxRequest>('resend sandbox');
  const faults = createFaultQueue<SandboxFault>('resend sandbox');
  let held: Promise<void> | null = null;

  function record(via: ResendOperationName, batch: number | null, body: Record<string, unknown>): string {
    const email: SentEmail = {
      id: randomUUID(),
      via,
      batch,
      from: String(body.from),
      to: asList(body.to)!,
      subject: String(body.subject),
      createdAt: clock.now(),
    };
    sent.push(email);
    return email.id;
  }

  async function sendEmail(body: unknown): Promise<Reply> {
    const problem = emailProblem(body, '');
    if (problem) return problem;
    await held;
    return { status: 200, body: { id: record('emails.send', null, body as Record<string, unknown>) } };
  }

  async function sendBatch(body: unknown): Promise<Reply> {
    if (!Array.isArray(body) || body.length === 0 || body.length > 100)
      return error(422, 'validation_error', 'The batch must be an array of 1 to 100 emails.');
    for (const [i, email] of body.entries()) {
      const problem = emailProblem(email, `emails[${i}]: `);
      if (problem) return problem; // strict validation: one bad email refuses the whole batch
    }
    await held;
    const batch = ++batches;
    return {
      status: 200,
      body: { data: body.map((email) => ({ id: record('batch.send', batch, email as Record<string, unknown>) })) },
    };
  }

  /** A keyed send: the key store answers repeats, `execute` runs once per key. */
  async function keyed(
    req: LoopbackRequest,
    entry: SandboxRequest,
    execute: (body: unknown) => Promise<Reply>,
  ): Promise<Reply> {
    const parsed = parseJsonBody(req.rawBody);
    if (!parsed.ok) return error(422, 'validation_error', 'The body is not valid JSON.');
    const key = entry.idempotencyKey;
    if (key === null) {
      entry.result = 'no-key';
      return execute(parsed.value);
    }
    if (key.length < 1 || key.length > 256)
      return error(400, 'invalid_idempotency_key', 'The key must be between 1-256 chars.');
    const { reply, result } = await keys.run(key, { fingerprint: `${req.path} ${JSON.stringify(parsed.value)}` }, () =>
      execute(parsed.value),
    );
    entry.result = result;
    return reply;
  }

  const routes: Route<(entry: SandboxRequest) => Reply | Promise<Reply>>[] = [
    { method: 'POST', path: '/emails', handle: (req) => (entry) => keyed(req, entry, sendEmail) },
    { method: 'POST', path: '/emails/batch', handle: (req) => (entry) => keyed(req, entry, sendBatch) },
    {
      method: 'GET',
      path: /^\/emails\/([^/]+)$/,
      handle: (_req, m) => () => getEmail(sent, decodeURIComponent(m![1]!)),
    },
  ];

  async function handle(req: LoopbackRequest): Promise<Reply> {
    const header = req.headers['idempotency-key'];
    const entry = log.record({
      method: req.method,
      path: req.path,
      idempotencyKey: typeof header === 'string' ? header : null,
      status: 0,
      result: 'refused',
    });
    let reply = atTheDoor(req, req.method === 'POST' ? faults.take() : undefined);
    if (!reply) {
      const routed = routeRequest(routes, req);
      reply = routed ? await routed.value(entry) : error(404, 'not_found', 'The requested endpoint does not exist.');
    }
    entry.status = reply.status;
    return reply;
  }

  const server = await startLoopbackServer({ port: options.port ?? 0, handle });

  return {
    url: server.url,
    count: (operation) =>
      operation === 'batch.send' ? batches : sent.filter((e) => operation === undefined || e.via === operation).length,
    emails: () => [...sent],
    requests: () => [...log.entries],
    requestCount: (f = {}) =>
      log.count(
        (r) => (f.method === undefined || r.method === f.method) && (f.path === undefined || r.path === f.path),
      ),
    keys: () => keys.keys(),
    advance: (ms) => clock.advance(ms),
    expireKeys: () => keys.expire(),
    failNext: (fault, times = 1) => faults.add(fault, times),
    hold() {
      let release!: () => void;
      held = new Promise<void>((r) => (release = r));
      return release; // a released gate stays open: awaiting it costs nothing
    },
    waitFor: (predicate) => log.waitFor(predicate),
    close: () => server.close(),
  };
}
