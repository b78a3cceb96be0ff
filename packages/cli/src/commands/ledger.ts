import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { createRunner, createSqliteLedger, jsonlHandoffSink, type ResolveResult } from '@retrysafe/core';
import { createAdapters, loadConfig, type RetrysafeConfig } from '@retrysafe/config';
import { asBusinessOperationId, type HandoffPacket, type Ledger, type OperationRecord, type OperationState, type Receipt } from '@retrysafe/contract';
import { paint, table } from '../output.js';
import { UsageError } from '../registry.js';

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
export async function openTarget(target: LedgerTarget, config: RetrysafeConfig | null = target.config ? loadConfig(target.config) : null): Promise<Ledger> {
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

async function withLedger<T>(target: LedgerTarget, fn: (ledger: Ledger) => Promise<T>, config?: RetrysafeConfig | null): Promise<T> {
  const ledger = await openTarget(target, config);
  try {
    return await fn(ledger);
  } finally {
    await ledger.close();
  }
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
    const rows = await ledger.list({ ...(target.state?.length ? { states: target.state as OperationState[] } : {}), limit: target.limit ?? 100 });
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
}

export async function ledgerShow(target: LedgerTarget, id: string): Promise<ShowResult | null> {
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
        resolution: r.resolution,
      },
      receipts: await ledger.receipts(bid),
    };
  });
}

export interface HandoffRow extends OperationSummary {
  readonly explanation: string;
  readonly safeNextActions: HandoffPacket['safeNextActions'];
  readonly lastKnown: HandoffPacket['lastKnown'] | null;
}

export async function ledgerHandoffs(target: LedgerTarget): Promise<HandoffRow[]> {
  return withLedger(target, async (ledger) => {
    const rows = await ledger.list({ states: ['handed-off'], limit: 1000 });
    return rows.map((r) => ({ ...summarize(r), explanation: r.handoff?.explanation ?? '', safeNextActions: r.handoff?.safeNextActions ?? [], lastKnown: r.handoff?.lastKnown ?? null }));
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
  const config = opts.config ? loadConfig(opts.config) : null;
  const adapters = config && (opts.resume || corrected !== undefined) ? Object.values(await createAdapters(config)) : [];
  try {
    return await withLedger(
      opts,
      async (ledger) => {
        const runner = createRunner({
          ledger,
          ...(config?.handoffs ? { handoff: jsonlHandoffSink(isAbsolute(config.handoffs) ? config.handoffs : resolve(config.baseDir, config.handoffs)) } : {}),
          ...(config?.policy ? { policy: config.policy } : {}),
          ...(config?.redact?.fields ? { redact: { fields: [...config.redact.fields] } } : {}),
        });
        const by = opts.by ?? process.env.USER ?? 'operator';
        if (opts.resume) {
          const record = await ledger.get(asBusinessOperationId(id));
          const resume = record?.handoff?.safeNextActions.find((a) => a.action === 'resume');
          if (record?.state === 'handed-off' && resume && !resume.safe && !opts.force) {
            throw new RefusedError(`not resuming ${id}: the handoff packet marks resume as not safe — ${resume.why}. Check at the provider first; then --mark-done <providerRef> if the effect exists, or --resume --force if you are sure it does not.`);
          }
          return runner.resolve(id, { action: 'resume' }, { adapters, by });
        }
        if (corrected !== undefined) return runner.resolve(id, { action: 'resend-with', params: corrected.params }, { adapters, by });
        if (opts.markDone !== undefined) return runner.resolve(id, { action: 'mark-done', providerRef: opts.markDone.trim() }, { by });
        return runner.resolve(id, { action: 'abandon' }, { by });
      },
      config,
    );
  } finally {
    for (const a of adapters) await a.close?.();
  }
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
