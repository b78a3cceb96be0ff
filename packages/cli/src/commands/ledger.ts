import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { createRunner, createSqliteLedger, jsonlHandoffSink, pruneLedger, RunnerConfigurationError, BrokenReceiptChainError, type PruneLedgerReport, type Resolution, type ResolveResult } from '@retrysafe/core';
import { personRef } from '@retrysafe/core/internal';
import { createAdapters, loadConfigFile, type RetrysafeConfig } from '@retrysafe/config';
import { LedgerError, PRUNABLE_STATES, UnsafeResumeError, asBusinessOperationId, type Duration, type HandoffPacket, type Ledger, type OperationRecord, type OperationState, type Receipt, type RetrySafetyCard } from '@retrysafe/contract';
import { paint, table } from '../output.js';
import { UsageError } from '../registry.js';
import { receiptKeysFromEnv, verifyChains, withParamsKeys, type VerifyRow } from './ledger-chain.js';

export interface LedgerTarget {
  /** SQLite file or postgres:// URL; default: the config's ledger, else ./retrysafe.db */
  readonly db?: string;
  /** PostgreSQL schema (default public). */
  readonly schema?: string;
  readonly config?: string;
}

export const STATES: readonly OperationState[] = ['claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling', 'succeeded', 'rejected', 'handed-off', 'abandoned'];

const isPostgres = (location: string) => /^postgres(ql)?:\/\//.test(location);

/** Opens the ledger the target names. A postgres:// URL needs the schema migrated (done on first use). */
export async function openTarget(target: LedgerTarget, given?: RetrysafeConfig | null): Promise<Ledger> {
  const config = given !== undefined ? given : target.config ? await loadConfigFile(target.config) : null;
  const location = target.db ?? config?.ledger ?? './retrysafe.db';
  if (isPostgres(location)) {
    const { createPostgresLedger } = await import('@retrysafe/ledger-postgres');
    return createPostgresLedger({ connectionString: location, ...(target.schema ? { schema: target.schema } : {}) });
  }
  if (target.schema) throw new UsageError('--schema applies to a postgres:// ledger only');
  const base = target.db ? process.cwd() : (config?.baseDir ?? process.cwd());
  const path = isAbsolute(location) ? location : resolve(base, location);
  // Opening a SQLite path creates the file: a mistyped path would show "No operations" and leave an empty ledger behind.
  if (!existsSync(path)) throw new UsageError(`no SQLite ledger at ${path} (pass --db <file> or a postgres:// URL, or --config naming the ledger)`);
  return createSqliteLedger({ path });
}

export async function withLedger<T>(target: LedgerTarget, fn: (ledger: Ledger) => Promise<T>, config?: RetrysafeConfig | null): Promise<T> {
  const ledger = await openTarget(target, config).catch((err: unknown) => Promise.reject(unreadable(err)));
  try {
    return await fn(ledger);
  } catch (err) {
    throw unreadable(err);
  } finally {
    await ledger.close().catch(() => undefined);
  }
}

/** A ledger file or record the driver cannot read (cut JSON, a corrupt SQLite file) is a typed LedgerError, not a raw stack. */
function unreadable(err: unknown): unknown {
  const e = err as { name?: unknown; code?: unknown; message?: unknown } | null;
  const raw = err instanceof SyntaxError || e?.name === 'SqliteError' || (typeof e?.code === 'string' && e.code.startsWith('SQLITE_'));
  return raw ? new LedgerError(`the ledger cannot be read: ${String(e?.message ?? err)}`, { cause: err }) : err;
}

/** A record as shown to an operator: no params (they may hold PII), no stored result body. */
export function summarize(r: OperationRecord) {
  return {
    businessOperationId: r.businessOperationId,
    provider: r.provider,
    operation: r.operation,
    state: r.state,
    attempts: r.attemptCount,
    lastOutcome: r.lastOutcome,
    providerRef: r.providerRef,
    providerKey: r.providerKey,
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(r.updatedAt).toISOString(),
    handoffReason: r.handoff?.reason ?? null,
  };
}
export type OperationSummary = ReturnType<typeof summarize>;

export async function ledgerLs(target: LedgerTarget & { state?: string[]; limit?: number }): Promise<OperationSummary[]> {
  for (const s of target.state ?? []) if (!STATES.includes(s as OperationState)) throw new UsageError(`--state '${s}' is not a state (${STATES.join(', ')})`);
  return withLedger(target, async (ledger) => {
    const rows = await ledger.list({ ...(target.state?.length ? { states: target.state as OperationState[] } : {}), limit: target.limit ?? 100, newestFirst: true });
    return rows.map(summarize);
  });
}

export interface ShowResult {
  readonly record: OperationSummary & {
    readonly intentFingerprint: string;
    readonly paramsFingerprint: string;
    readonly firstDispatchedAt: string | null;
    readonly handoff: HandoffPacket | null;
    readonly resolution: OperationRecord['resolution'];
  };
  readonly receipts: readonly Receipt[];
  /** The receipt chain checked against the row's anchor (issue 18): `ok: false` when it was edited outside retrysafe. */
  readonly chain: VerifyRow;
}

/** `resolve --by` is stored as given; shown as a pseudonym (`person#…`) unless the operator asks (`--show-by`). */
function shownResolution(r: OperationRecord['resolution'], showBy: boolean): OperationRecord['resolution'] {
  if (!r || r.by === undefined || showBy) return r;
  return { ...r, by: personRef(r.by) };
}

export async function ledgerShow(target: LedgerTarget & { readonly showBy?: boolean }, id: string): Promise<ShowResult | null> {
  const bid = asBusinessOperationId(id);
  return withLedger(target, async (ledger) => {
    const r = await ledger.get(bid);
    if (!r) return null;
    return {
      record: {
        ...summarize(r),
        intentFingerprint: r.intentFingerprint,
        paramsFingerprint: r.paramsFingerprint,
        firstDispatchedAt: r.firstDispatchedAt === null ? null : new Date(r.firstDispatchedAt).toISOString(),
        handoff: r.handoff,
        resolution: shownResolution(r.resolution, target.showBy === true),
      },
      receipts: await ledger.receipts(bid),
      // Unkeyed chains from before a key was set pass here (a keyed-then-unkeyed chain never does); `verify` is the strict check.
      chain: (await verifyChains(ledger, [bid], { allowUnkeyed: true }))[0]!,
    };
  });
}

export interface HandoffRow extends OperationSummary {
  readonly explanation: string;
  readonly safeNextActions: HandoffPacket['safeNextActions'];
  readonly lastKnown: HandoffPacket['lastKnown'] | null;
  /** Set when the operation's receipt chain is broken (issue 18): do not act on it before finding out why. */
  readonly chainBroken?: string;
}

export async function ledgerHandoffs(target: LedgerTarget): Promise<HandoffRow[]> {
  return withLedger(target, async (ledger) => {
    const rows = await ledger.list({ states: ['handed-off'], limit: 1000 });
    const chains = new Map((await verifyChains(ledger, rows.map((r) => r.businessOperationId), { allowUnkeyed: true })).map((c) => [c.businessOperationId, c]));
    return rows.map((r) => {
      const chain = chains.get(r.businessOperationId);
      return { ...summarize(r), explanation: r.handoff?.explanation ?? '', safeNextActions: r.handoff?.safeNextActions ?? [], lastKnown: r.handoff?.lastKnown ?? null, ...(chain && !chain.ok ? { chainBroken: chain.reason ?? 'broken' } : {}) };
    });
  });
}

export interface ResolveOptions extends LedgerTarget {
  readonly resume?: boolean;
  readonly markDone?: string;
  readonly abandon?: boolean;
  /** A JSON file with corrected params: a new revision of an operation none of whose attempts was applied. */
  readonly resendWith?: string;
  readonly by?: string;
  /** Resume even though the packet marks resume as not safe (you checked at the provider). */
  readonly force?: boolean;
}

/** A person asked for something the handoff packet marks as not safe, without --force. Exit 1, nothing sent. */
export class RefusedError extends Error {
  override name = 'RefusedError';
}

/**
 * Resolves a handed-off operation. `--resume` re-sends with the SAME provider key through the adapter
 * the config names (credentials from environment variables), with a fresh budget; `--mark-done`
 * records the provider reference a person verified; `--abandon` gives it up. Nothing else is sent.
 */
export async function ledgerResolve(opts: ResolveOptions, id: string): Promise<ResolveResult> {
  const chosen = [opts.resume === true, opts.markDone !== undefined, opts.abandon === true, opts.resendWith !== undefined].filter(Boolean).length;
  if (chosen !== 1) throw new UsageError('choose exactly one of --resume, --mark-done <providerRef>, --abandon, --resend-with <params.json>');
  if (opts.resendWith !== undefined && !opts.config) throw new UsageError('--resend-with sends through the adapter: pass --config <file> naming it (credentials come from environment variables)');
  const corrected = opts.resendWith !== undefined ? readParams(opts.resendWith) : undefined;
  if (opts.markDone !== undefined && !opts.markDone.trim()) throw new UsageError('--mark-done needs the provider reference of the effect you verified (e.g. pi_123)');
  if (opts.resume && !opts.config) throw new UsageError('--resume re-sends through the adapter: pass --config <file> naming it (credentials come from environment variables)');
  asBusinessOperationId(id);
  const config = opts.config ? await loadConfigFile(opts.config) : null;
  const adapters = config && (opts.resume || corrected !== undefined) ? Object.values(await createAdapters(config)) : [];
  try {
    return await withLedger(
      opts,
      async (ledger) => {
        const runner = createRunner({
          ledger: withParamsKeys(ledger),
          ...(config?.handoffs ? { handoff: jsonlHandoffSink(isAbsolute(config.handoffs) ? config.handoffs : resolve(config.baseDir, config.handoffs)) } : {}),
          ...(config?.policy ? { policy: config.policy } : {}),
          ...(config?.redact?.fields ? { redact: { fields: [...config.redact.fields] } } : {}),
          ...(receiptKeysFromEnv().current ? { receiptKey: receiptKeysFromEnv().current! } : {}),
          ...(receiptKeysFromEnv().keyring ? { receiptKeyring: receiptKeysFromEnv().keyring! } : {}),
        });
        const by = opts.by ?? process.env.USER ?? 'operator';
        const resolution: Resolution = opts.resume ? { action: 'resume', ...(opts.force ? { force: true } : {}) } : corrected !== undefined ? { action: 'resend-with', params: corrected.params } : opts.markDone !== undefined ? { action: 'mark-done', providerRef: opts.markDone.trim() } : { action: 'abandon' };
        // The runner owns the rules (broken chain, unsafe resume, resend-with); the CLI only words its refusals for the command line.
        return await runner.resolve(id, resolution, { adapters, by }).catch((err: unknown) => {
          if (BrokenReceiptChainError.isInstance(err)) throw new RefusedError(`not resolving ${id}: its receipt chain is broken at receipt #${err.index + 1} (${err.reason}); nothing was sent. Find out who edited the ledger (retrysafe ledger verify --all) before acting on it.`);
          if (UnsafeResumeError.isInstance(err)) throw new RefusedError(`not resuming ${id}: the handoff packet marks resume as not safe — ${err.why}. Check at the provider first; then --mark-done <providerRef> if the effect exists, or --resume --force if you are sure it does not.`);
          throw err;
        });
      },
      config,
    );
  } finally {
    for (const a of adapters) await a.close?.();
  }
}

export interface ResolveAllOptions extends LedgerTarget {
  /** Only operations of these operation names (e.g. sandbox.records.create). */
  readonly operation?: string[];
  /** Only these handoff reasons (e.g. rejected, lookup-window-exhausted). */
  readonly reason?: string[];
  /** Only these business-operation ids. */
  readonly id?: string[];
  readonly resume?: boolean;
  readonly abandon?: boolean;
  readonly force?: boolean;
  readonly by?: string;
  /** Say what would be done, send and write nothing. */
  readonly dryRun?: boolean;
}

export interface ResolveAllRow {
  readonly businessOperationId: string;
  readonly operation: string;
  readonly handoffReason: string | null;
  /** `would-resume` / `would-abandon` on a dry run; `refused` when the packet marks the action not safe (without --force). */
  readonly plan: 'resume' | 'abandon' | 'refused';
  readonly why: string;
  /** The resolution's result; null on a dry run or when refused. */
  readonly result: ResolveResult | null;
}

export interface ResolveAllReport {
  readonly dryRun: boolean;
  readonly action: 'resume' | 'abandon';
  readonly matched: number;
  readonly rows: readonly ResolveAllRow[];
  readonly ok: boolean;
}

/**
 * Resolves every handed-off operation the filters match, one by one, with the same safety rule as a
 * single resolve: an action the packet marks not safe is refused (and reported) unless --force.
 * `--mark-done` has no bulk form: each needs the provider reference a person verified.
 * With --dry-run nothing is sent and nothing is written.
 */
export async function ledgerResolveAll(opts: ResolveAllOptions): Promise<ResolveAllReport> {
  const chosen = [opts.resume === true, opts.abandon === true].filter(Boolean).length;
  if (chosen !== 1) throw new UsageError('choose exactly one of --resume, --abandon (--mark-done needs one provider reference per operation: use ledger resolve <id>)');
  if (opts.resume && !opts.config && !opts.dryRun) throw new UsageError('--resume re-sends through the adapters: pass --config <file> naming them (credentials come from environment variables)');
  for (const i of opts.id ?? []) asBusinessOperationId(i);
  const action = opts.resume ? 'resume' : 'abandon';
  const config = opts.config ? await loadConfigFile(opts.config) : null;
  const matched = await withLedger(
    opts,
    async (ledger) =>
      (await ledger.list({ states: ['handed-off'] })).filter(
        (r) => (!opts.operation?.length || opts.operation.includes(r.operation)) && (!opts.reason?.length || opts.reason.includes(r.handoff?.reason ?? '')) && (!opts.id?.length || opts.id.includes(r.businessOperationId)),
      ),
    config,
  );
  const planned = matched.map((r) => {
    const a = r.handoff?.safeNextActions.find((x) => x.action === action);
    const refused = a !== undefined && !a.safe && !opts.force;
    return { record: r, plan: (refused ? 'refused' : action) as ResolveAllRow['plan'], why: a ? `${a.safe ? 'safe' : opts.force ? 'not safe, forced' : 'not safe'}: ${a.why}` : 'the packet names no such action' };
  });
  const rows: ResolveAllRow[] = [];
  for (const p of planned) {
    const base = { businessOperationId: p.record.businessOperationId, operation: p.record.operation, handoffReason: p.record.handoff?.reason ?? null, plan: p.plan, why: p.why };
    if (opts.dryRun || p.plan === 'refused') {
      rows.push({ ...base, result: null });
      continue;
    }
    const result = await ledgerResolve({ ...opts, ...(action === 'resume' ? { resume: true, abandon: false } : { abandon: true, resume: false }), force: true }, p.record.businessOperationId);
    rows.push({ ...base, result });
  }
  const ok = rows.every((r) => r.plan !== 'refused' && (r.result === null || r.result.status === 'resolved' || r.result.status === 'done'));
  return { dryRun: opts.dryRun === true, action, matched: matched.length, rows, ok };
}

export function resolveAllText(r: ResolveAllReport, color = false): string {
  if (r.matched === 0) return 'No handed-off operation matches: nothing to resolve.';
  const verb = r.action === 'resume' ? 'resume' : 'abandon';
  const lines = r.rows.map((x) => {
    if (x.plan === 'refused') return `${paint('red', '✗', color)} ${x.businessOperationId}  refused: ${x.why} (check at the provider; --force if you are sure)`;
    if (r.dryRun) return `${paint('cyan', '·', color)} ${x.businessOperationId}  would ${verb} (${x.handoffReason ?? '?'}; ${x.why})`;
    return resolveText(x.result!, color);
  });
  const refused = r.rows.filter((x) => x.plan === 'refused').length;
  const head = r.dryRun ? `Dry run: ${r.matched - refused} of ${r.matched} handed-off operation${r.matched === 1 ? '' : 's'} would be ${verb === 'resume' ? 'resumed' : 'abandoned'}${refused ? `, ${refused} refused` : ''}; nothing was sent or written.` : `${r.matched} handed-off operation${r.matched === 1 ? '' : 's'} matched:`;
  return [head, ...lines].join('\n');
}

/** The corrected params of `--resend-with`: a JSON object in a file. */
function readParams(file: string): { params: Record<string, unknown> } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--resend-with: cannot read ${file}: ${(err as Error).message}`);
  }
  let params: unknown;
  try {
    params = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--resend-with: ${file} is not JSON: ${(err as Error).message}`);
  }
  if (typeof params !== 'object' || params === null || Array.isArray(params)) throw new UsageError(`--resend-with: ${file} must hold a JSON object of params`);
  return { params: params as Record<string, unknown> };
}

// ------------------------------------------------------------------ text views

export function lsTable(rows: readonly OperationSummary[]): string {
  if (rows.length === 0) return 'No operations.';
  return table(
    ['business-operation id', 'state', 'attempts', 'last outcome', 'provider ref', 'updated'],
    rows.map((r) => [r.businessOperationId, r.state, String(r.attempts), r.lastOutcome ?? '—', r.providerRef ?? '—', r.updatedAt]),
    { right: [2] },
  );
}

const kv = (pairs: readonly (readonly [string, unknown])[]) => pairs.map(([k, v]) => `${k.padEnd(20)} ${v === null || v === undefined ? '—' : String(v)}`).join('\n');

function packetText(p: HandoffPacket, color: boolean): string {
  const last = p.lastKnown;
  return [
    paint('bold', `Handed off: ${p.reason}`, color),
    `  ${p.explanation}`,
    `  last known: ${last.outcome ?? '—'}${last.status ? ` · HTTP ${last.status}` : ''}${last.code ? ` · ${last.code}` : ''}${last.providerRef ? ` · ref ${last.providerRef}` : ''}${last.message && last.message !== `HTTP ${last.status}` ? ` · ${last.message}` : ''}`,
    `  provider key: ${p.providerKey ?? '(none travels)'}`,
    '  next actions:',
    ...p.safeNextActions.map((a) => `    ${a.safe ? paint('green', '✓ safe    ', color) : paint('red', '✗ not safe', color)} ${a.action.padEnd(9)} ${a.why}`),
    `  resolve with: retrysafe ledger resolve ${p.businessOperationId} ${p.safeNextActions.filter((a) => a.safe).map((a) => (a.action === 'mark-done' ? '--mark-done <providerRef>' : a.action === 'resend-with' ? '--resend-with <params.json>' : `--${a.action}`)).join(' | ') || '(no action is known to be safe: verify at the provider first)'}`,
  ].join('\n');
}

export function showText(r: ShowResult, color = false): string {
  const rec = r.record;
  const out = [
    kv([
      ['operation', rec.operation],
      ['business op id', rec.businessOperationId],
      ['state', rec.state],
      ['attempts', rec.attempts],
      ['last outcome', rec.lastOutcome],
      ['provider key', rec.providerKey],
      ['provider ref', rec.providerRef],
      ['intent', rec.intentFingerprint],
      ['created', rec.createdAt],
      ['first dispatched', rec.firstDispatchedAt],
      ['updated', rec.updatedAt],
      ['resolution', rec.resolution ? `${rec.resolution.action}${rec.resolution.providerRef ? ` (${rec.resolution.providerRef})` : ''} by ${rec.resolution.by ?? '?'} at ${new Date(rec.resolution.at).toISOString()}` : null],
    ]),
  ];
  if (rec.handoff) out.push('', packetText(rec.handoff, color));
  if (!r.chain.ok) out.push('', paint('red', `✗ receipt chain broken at #${(r.chain.index ?? 0) + 1}: ${r.chain.reason} — the ledger was edited outside retrysafe; do not act on these receipts before finding out why`, color));
  out.push('', `Receipts (${r.receipts.length}):`);
  for (const x of r.receipts) {
    const extra = [x.status ? `HTTP ${x.status}` : '', x.code ?? '', x.providerRef ? `ref ${x.providerRef}` : '', x.decision.delayMs ? `wait ${x.decision.delayMs} ms` : ''].filter(Boolean).join(' · ');
    out.push(`  #${String(x.seq).padEnd(3)} ${x.startedAt}  ${x.kind.padEnd(8)} → ${(x.outcome ?? '—').padEnd(11)} ${x.decision.action}: ${x.decision.reason}${extra ? paint('dim', `  (${extra})`, color) : ''}`);
  }
  return out.join('\n');
}

export function handoffsText(rows: readonly HandoffRow[], color = false): string {
  if (rows.length === 0) return 'No handoffs: nothing is waiting for a person.';
  const blocks = rows.map((r) =>
    [
      `${paint('bold', r.businessOperationId, color)}  ${r.operation}  ${paint('yellow', r.handoffReason ?? '?', color)}  (${r.attempts} attempt${r.attempts === 1 ? '' : 's'}, ${r.updatedAt})`,
      `  ${r.explanation}`,
      ...(r.chainBroken ? [paint('red', `  ✗ receipt chain broken (${r.chainBroken}): the ledger was edited outside retrysafe — resolve refuses it`, color)] : []),
      `  safe: ${r.safeNextActions.filter((a) => a.safe).map((a) => a.action).join(', ') || 'none known — verify at the provider'}${r.safeNextActions.some((a) => !a.safe) ? paint('dim', `   not safe: ${r.safeNextActions.filter((a) => !a.safe).map((a) => a.action).join(', ')}`, color) : ''}`,
    ].join('\n'),
  );
  return `${rows.length} operation${rows.length === 1 ? '' : 's'} waiting for a person (see docs/runbook.md):\n\n${blocks.join('\n\n')}\n\nInspect one with: retrysafe ledger show <id>`;
}

export function resolveText(r: ResolveResult, color = false): string {
  switch (r.status) {
    case 'resolved':
      return `${paint('green', '✓', color)} ${r.businessOperationId}: ${r.state}${r.providerRef ? ` (provider ref ${r.providerRef})` : ''}`;
    case 'done':
      return `${paint('green', '✓', color)} ${r.businessOperationId}: resumed and done${r.adopted ? ' (the provider already had it: result adopted, nothing created twice)' : ''}; provider ref ${r.providerRef ?? '—'} after ${r.attempts} attempt${r.attempts === 1 ? '' : 's'} in all`;
    case 'in-progress':
      return `${paint('yellow', '…', color)} ${r.businessOperationId}: another worker holds it${r.statusRef ? ` (status ${r.statusRef})` : ''}; try again in ${Math.ceil(r.retryAfterMs / 1000)} s`;
    case 'handed-off':
      return `${paint('red', '✗', color)} ${r.businessOperationId}: resumed, but handed off again\n${packetText(r.packet, color)}`;
  }
}

/** What `ledger prune` says about the provider keys' retention, in its help and its refusal. */
export const PRUNE_RETENTION_NOTE =
  'A closed operation must stay in the ledger at least as long as the provider keeps its idempotency key (the card\'s retention.minimum) plus the clock-skew margin: ' +
  'prune refuses a younger --older-than than the longest such retention among the cards it knows (the built-in adapters\', and --config\'s), unless --force. ' +
  'After a record is pruned a repeat of the same business operation is a new one. See docs/retention.md.';

export interface PruneCommandOptions extends LedgerTarget {
  readonly olderThan: string;
  readonly export?: string;
  readonly dryRun?: boolean;
  readonly force?: boolean;
  readonly state?: string[];
}

/** The cards the CLI knows: every built-in adapter's, and the `type: http` operations of --config. */
async function knownCards(config?: string): Promise<RetrySafetyCard[]> {
  const { loadAdapters, cardsOf } = await import('../registry.js');
  const entries = await loadAdapters();
  if (config) entries.push(...(await loadAdapters([], [], config).catch(() => [])));
  const cards: RetrySafetyCard[] = [];
  for (const e of entries) for (const c of await cardsOf(e)) cards.push(c.card);
  return cards;
}

/** `retrysafe ledger prune`: retention of closed operations (pruneLedger in @retrysafe/core). */
export async function ledgerPrune(opts: PruneCommandOptions): Promise<PruneLedgerReport> {
  if (!opts.olderThan) throw new UsageError('--older-than <duration> is required (e.g. 30d)');
  for (const s of opts.state ?? []) if (!PRUNABLE_STATES.includes(s as OperationState)) throw new UsageError(`--state '${s}': only closed operations are pruned (${PRUNABLE_STATES.join(', ')})`);
  if (opts.export && existsSync(opts.export)) throw new UsageError(`--export ${opts.export}: the file exists (prune appends receipts to a new file; move it away first)`);
  const cards = await knownCards(opts.config);
  return withLedger(opts, async (ledger) => {
    try {
      return await pruneLedger(ledger, {
        olderThan: opts.olderThan as Duration,
        cards,
        ...(opts.force ? { force: true } : {}),
        ...(opts.dryRun ? { dryRun: true } : {}),
        ...(opts.export && !opts.dryRun ? { exportPath: opts.export } : {}),
        ...(opts.state?.length ? { states: opts.state as OperationState[] } : {}),
      });
    } catch (err) {
      if (RunnerConfigurationError.isInstance(err)) throw new UsageError(`--older-than: ${err.message.replace(/^prune\.olderThan: /, '')}`);
      throw err;
    }
  });
}

export function pruneText(r: PruneLedgerReport, exportPath?: string): string {
  const parts = Object.entries(r.byState).map(([s, n]) => `${n} ${s}`);
  const what = `${r.pruned} operation${r.pruned === 1 ? '' : 's'}${parts.length ? ` (${parts.join(', ')})` : ''} last changed before ${new Date(r.before).toISOString()}`;
  const lines = [r.dryRun ? `would prune ${what}; nothing deleted (--dry-run)` : `pruned ${what}`];
  if (!r.dryRun && exportPath) lines.push(`receipts of ${r.exported} operation${r.exported === 1 ? '' : 's'} written to ${exportPath} first (verify offline: retrysafe ledger verify --file ${exportPath})`);
  if (r.floor.card) lines.push(r.floor.forced ? `below the key retention floor of ${r.floor.card} (${Math.round(r.floor.ms / 3_600_000)}h): forced` : `key retention floor: ${Math.round(r.floor.ms / 3_600_000)}h (${r.floor.card})`);
  return lines.join('\n');
}
