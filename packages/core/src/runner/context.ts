/** What every part of the runner shares: the worker's ledger, clock and identity, its options, and its one log function. */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type Fenced, type Ledger, LedgerError, type OperationSpec, RetrysafeError } from '@retrysafe/contract';
import { systemClock } from '../clock.js';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import type { Operation } from '../intake/operation.js';
import { checkReceiptKey } from '../receipts.js';
import { createRedactor, type Redactor } from '../redact.js';
import { createTelemetry, type EventFields } from '../telemetry.js';
import { createHeartbeat } from './heartbeat.js';
import type { LogEntry, RunnerOptions } from './types.js';

export type LogSubject = Pick<Operation, 'id' | 'card' | 'redactor'> & { readonly scope?: Operation['scope'] };

/** Renewed between steps and by the heartbeat while a call is in flight. */
export interface Lease {
  readonly ref: Fenced;
  readonly leaseMs: number;
  expiresAt: number;
}

export type RunnerContext = Readonly<ReturnType<typeof createContext>>;

export const errText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** A ledger driver's own error (SQLite's, a parser's on a row edited by hand) as a LedgerError. A parser's message
 * quotes the stored text around the break (a param, a token): neither it nor its error is kept. */
function typed(err: unknown): unknown {
  const e = err as { name?: unknown; code?: unknown } | null;
  const parse = err instanceof SyntaxError;
  const driver = e?.name === 'SqliteError' || (typeof e?.code === 'string' && e.code.startsWith('SQLITE_'));
  if (RetrysafeError.isInstance(err) || !(parse || driver)) return err;
  if (parse) return new LedgerError('the ledger failed: a stored value is not valid JSON (cut or corrupt)');
  return new LedgerError(`the ledger failed: ${errText(err)}`, { cause: err });
}

export function typedLedger(ledger: Ledger): Ledger {
  return new Proxy(ledger, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        try {
          return Promise.resolve(v.apply(target, args)).catch((err: unknown) => Promise.reject(typed(err)));
        } catch (err) {
          return Promise.reject(typed(err));
        }
      };
    },
  });
}

export function createContext(options: RunnerOptions) {
  if (!options?.ledger) throw new RunnerConfigurationError('ledger', 'createRunner needs { ledger }');
  const ledger = typedLedger(options.ledger);
  const clock = options.clock ?? systemClock;
  const baseRedactor = createRedactor(options.redact ?? {});
  if (options.receiptKey !== undefined)
    checkReceiptKey(options.receiptKey, (why) => new RunnerConfigurationError('receiptKey', why));
  const tele = createTelemetry(options.telemetry, () => clock.now());
  /** `message` may be a function: it is called only when a logger is set. */
  const log = (
    level: LogEntry['level'],
    event: string,
    message: string | (() => string),
    // No id before the intent is resolved: the id of a spelling the provider has not resolved is no operation's.
    op?: Omit<LogSubject, 'id'> & Partial<LogSubject>,
    fields?: EventFields,
  ): void => {
    try {
      tele.event(event, level, fields, op?.card.operation, op?.scope);
    } catch {
      // Telemetry must not change what happens to the operation.
    }
    if (!options.logger) return;
    const text = (op?.redactor ?? baseRedactor).text(typeof message === 'function' ? message() : message);
    try {
      options.logger({
        at: new Date(clock.now()).toISOString(),
        level,
        event,
        ...(op?.id !== undefined && { businessOperationId: op.id }),
        ...(op && { operation: op.card.operation }),
        ...fields,
        message: text,
      });
    } catch {
      // A failing logger must not change what happens to the operation.
    }
  };
  // A renewal's lease runs from before it was asked, never from its answer; a lost lease shows at the next fenced write.
  const heartbeat = createHeartbeat<Lease>((lease) => {
    const at = clock.now();
    ledger.renewLease(lease.ref, lease.leaseMs, at).then(
      () => {
        lease.expiresAt = at + lease.leaseMs;
      },
      () => undefined,
    );
  });
  return {
    options,
    ledger,
    clock,
    heartbeat,
    random: options.random ?? Math.random,
    owner: options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    baseRedactor,
    // Each operation spec's redactor before values (intake builds it once).
    redactors: new WeakMap<OperationSpec, Redactor>(),
    tele,
    log,
  };
}
