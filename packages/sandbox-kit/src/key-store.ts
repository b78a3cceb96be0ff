import type { SandboxReply } from './server.js';

/** One idempotency key as the sandbox remembers it. */
export interface KeyEntry<M = undefined> {
  readonly key: string;
  /** What "the same request" means to this provider (params, and for some the endpoint too). */
  readonly fingerprint: string;
  /** Provider data kept with the key (e.g. the endpoint, to word the mismatch answer). */
  readonly meta: M;
  /** Sandbox-clock ms when the first request with this key arrived. */
  readonly storedAt: number;
  readonly state: 'in-flight' | 'done';
  /** The stored response, once the first request finished. */
  readonly reply?: SandboxReply;
}

/** A request arriving with a key. */
export interface KeyedRequest<M = undefined> {
  readonly fingerprint: string;
  readonly meta?: M;
}

/** A provider's answers, as data: each sandbox states its own status codes, bodies and headers. */
export interface KeyAnswers<M = undefined> {
  /**
   * Same key while the first request still runs (Stripe 409 idempotency_key_in_use, IETF draft 409).
   * Omit it only for an endpoint that answers synchronously, so that no request can see the first in flight.
   */
  readonly inFlight?: SandboxReply | ((entry: KeyEntry<M>, request: KeyedRequest<M>) => SandboxReply);
  /** Same key, another request (Stripe 400 idempotency_error, IETF draft 422, EC2 IdempotentParameterMismatch). */
  readonly mismatch: SandboxReply | ((entry: KeyEntry<M>, request: KeyedRequest<M>) => SandboxReply);
  /** Which check comes first when a key is both in flight and mismatched. Default `in-flight` (Stripe); the IETF draft checks the payload first. */
  readonly precedence?: 'in-flight' | 'mismatch';
  /** Headers a replayed response carries besides the stored ones (the provider's replay indicator). */
  readonly replayHeaders?: Readonly<Record<string, string>>;
  /** A provider that answers a known key with the current state rather than the stored response (an async job's status URL). */
  readonly replay?: (entry: KeyEntry<M>) => SandboxReply;
  /** Which first responses are stored under the key (default: all, errors too). A response not stored releases the key. */
  readonly stores?: (reply: SandboxReply) => boolean;
}

/** What the key store did with one keyed request. */
export type KeyedResult = 'executed' | 'replayed' | 'in-flight' | 'mismatch';

export interface KeyStoreOptions<M> {
  /** Keys are forgotten this long after their first request (a re-send then executes again). Null: kept for ever. */
  readonly retentionMs: number | null;
  readonly clock: { now(): number };
  readonly answers: KeyAnswers<M>;
}

export interface KeyStore<M = undefined> {
  /**
   * Answers a keyed request: replays the stored response, refuses a mismatch or an in-flight key, or
   * runs `execute` (the endpoint) once and stores its response as the answers say.
   */
  run(
    key: string,
    request: KeyedRequest<M>,
    execute: () => SandboxReply | Promise<SandboxReply>,
  ): Promise<{ readonly reply: SandboxReply; readonly result: KeyedResult }>;
  /** The retained entry for `key`, if any. */
  get(key: string): KeyEntry<M> | undefined;
  /** Keys retained now (expired ones pruned first). */
  keys(): string[];
  /** Forgets finished keys now, as if past retention (all, or those `filter` accepts); returns how many. */
  expire(filter?: (key: string, entry: KeyEntry<M>) => boolean): number;
}

export function createKeyStore<M = undefined>(options: KeyStoreOptions<M>): KeyStore<M> {
  const { retentionMs, clock, answers } = options;
  if (retentionMs !== null && !(Number.isFinite(retentionMs) && retentionMs >= 0))
    throw new RangeError(`key store: retentionMs must be a number >= 0 or null, got ${retentionMs}`);
  const entries = new Map<string, { -readonly [K in keyof KeyEntry<M>]: KeyEntry<M>[K] }>();
  const answer = (a: KeyAnswers<M>['mismatch'] | undefined, entry: KeyEntry<M>, request: KeyedRequest<M>) => {
    if (a === undefined)
      throw new Error(
        `key store: key ${JSON.stringify(entry.key)} seen in flight, but this sandbox states no in-flight answer`,
      );
    return typeof a === 'function' ? a(entry, request) : a;
  };
  const expired = (e: KeyEntry<M>) =>
    e.state === 'done' && retentionMs !== null && e.storedAt + retentionMs <= clock.now();
  const prune = () => {
    for (const [k, e] of entries) if (expired(e)) entries.delete(k);
  };
  const lookup = (key: string) => {
    const e = entries.get(key);
    if (e && expired(e)) {
      entries.delete(key);
      return undefined;
    }
    return e;
  };

  return {
    async run(key, request, execute) {
      const known = lookup(key);
      if (known) {
        const mismatched = known.fingerprint !== request.fingerprint;
        const inFlight = known.state === 'in-flight';
        const first =
          answers.precedence === 'mismatch'
            ? mismatched
              ? 'mismatch'
              : inFlight
                ? 'in-flight'
                : null
            : inFlight
              ? 'in-flight'
              : mismatched
                ? 'mismatch'
                : null;
        if (first === 'in-flight') return { reply: answer(answers.inFlight, known, request), result: 'in-flight' };
        if (first === 'mismatch') return { reply: answer(answers.mismatch, known, request), result: 'mismatch' };
        const stored = known.reply!;
        if (answers.replay) return { reply: answers.replay(known), result: 'replayed' };
        return {
          reply: answers.replayHeaders
            ? { ...stored, headers: { ...(stored.headers ?? {}), ...answers.replayHeaders } }
            : stored,
          result: 'replayed',
        };
      }
      const entry = {
        key,
        fingerprint: request.fingerprint,
        meta: request.meta as M,
        storedAt: clock.now(),
        state: 'in-flight' as 'in-flight' | 'done',
        reply: undefined as SandboxReply | undefined,
      };
      entries.set(key, entry);
      let reply: SandboxReply;
      try {
        reply = await execute();
      } catch (err) {
        if (entries.get(key) === entry) entries.delete(key);
        throw err;
      }
      entry.state = 'done';
      entry.reply = reply;
      if (answers.stores && !answers.stores(reply) && entries.get(key) === entry) entries.delete(key);
      return { reply, result: 'executed' };
    },
    get: lookup,
    keys() {
      prune();
      return [...entries.keys()];
    },
    expire(filter) {
      let n = 0;
      for (const [k, e] of entries) {
        if (e.state === 'done' && (!filter || filter(k, e))) {
          entries.delete(k);
          n++;
        }
      }
      return n;
    },
  };
}
