import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

/**
 * The fence file (`fence.yaml`): which upstream tools run through the runner, and the card facts of each.
 * Everything a tool does not declare is `unknown`, and the runner treats unknowns as the decision table says:
 * no blind re-send, reconcile if it can, else hand off.
 */
export interface FenceConfig {
  /** Provider name for cards and business-operation ids (an identifier, e.g. `orders`). */
  readonly name: string;
  /** SQLite path (relative to the file) or postgres:// URL. Several proxies share state through PostgreSQL. */
  readonly ledger: string;
  readonly handoffs?: string;
  /** Timeout of one upstream tool call, ms (default 10 000). A timeout is an unknown outcome, never a failure. */
  readonly timeoutMs: number;
  readonly policy?: FencePolicy;
  readonly tools: Readonly<Record<string, FenceToolConfig>>;
  /**
   * Changes to the environment a stdio upstream starts with (it gets the fence's own environment): a string
   * sets the variable, `null` removes it.
   */
  readonly env?: Readonly<Record<string, string | null>>;
  /** Folder the file was read from (relative paths resolve against it). */
  readonly baseDir: string;
}

export interface FencePolicy {
  readonly maxAttempts?: number;
  readonly maxElapsedMs?: number;
  readonly baseMs?: number;
  readonly capMs?: number;
  readonly lookupWindowMs?: number;
  readonly leaseMs?: number;
  readonly waitForOtherMs?: number;
}

export type FenceSideEffect = 'create' | 'send' | 'set' | 'upsert' | 'delete' | 'charge' | 'async-job';

export interface FenceToolConfig {
  readonly kind: FenceSideEffect;
  /** True when calling the tool twice has the effect of calling it once (a set-value update). Default false. */
  readonly idempotentByNature?: boolean;
  /** Argument paths that name the business intent; the business-operation id is derived from them. */
  readonly intent: readonly string[];
  /** Where a provider key goes, if the upstream tool accepts one. */
  readonly key?: FenceKeyConfig;
  /** How to reconcile: an upstream read/list tool and how to match its answer. */
  readonly lookup?: FenceLookupConfig;
  /** How an `isError` tool result is read: `rejected` (nothing was applied) or `unknown` (default). */
  readonly toolErrors?: 'rejected' | 'unknown';
  /** Regular expressions: an `isError` text that matches one is `rejected` whatever `toolErrors` says. */
  readonly rejectWhen?: readonly string[];
  /** Path in the tool's result of the id of what it created (e.g. `id`). */
  readonly resultRef?: string;
  /** Where the facts above come from (the upstream's docs, its source, a probe run). */
  readonly source?: string;
}

export interface FenceKeyConfig {
  readonly argument: string;
  readonly maxLength?: number;
  /** What the upstream does with a repeated key: `replays` its first answer, `rejects-duplicate`, or `none`. */
  readonly semantics?: 'replays' | 'rejects-duplicate' | 'none';
  /** How long the upstream keeps a key (e.g. `24h`); unknown if not given. */
  readonly retention?: string;
  readonly concurrency?: 'rejects-in-progress' | 'waits-then-replays' | 'duplicates';
  readonly parameterMatching?: 'mismatch-error' | 'replay-anyway' | 'none';
  readonly source?: string;
}

export interface FenceLookupConfig {
  /** The upstream read/list tool. */
  readonly tool: string;
  /** Its arguments; a string `{{path}}` is replaced by that argument of the fenced call. */
  readonly arguments?: Readonly<Record<string, unknown>>;
  /** Path to the array of items in the read tool's answer (structuredContent, else its JSON text); '' = the answer itself. */
  readonly items: string;
  /** Item path → argument path: an item matches when every listed value equals the call's. */
  readonly match: Readonly<Record<string, string>>;
  /** Worst-case delay before a created item is listed: `0`/null = immediately; unknown if not given (absence then proves nothing). */
  readonly consistencyDelay?: string | null;
  /**
   * How long after the fence gave up on a call the upstream may still apply it (e.g. its own request
   * timeout, `30s`). Unknown if not given: then a lookup's "not found" never proves absence.
   */
  readonly lateApplyBound?: string;
  readonly source?: string;
}

/** A fence file that cannot be used; the message names the path and, for an unknown key, the nearest known one. */
export class FenceConfigError extends Error {
  override readonly name = 'FenceConfigError';
  readonly code = 'RETRYSAFE_FENCE_CONFIG';
}

const TOP = ['name', 'ledger', 'handoffs', 'timeoutMs', 'policy', 'tools', 'env'] as const;
const POLICY = [
  'maxAttempts',
  'maxElapsedMs',
  'baseMs',
  'capMs',
  'lookupWindowMs',
  'leaseMs',
  'waitForOtherMs',
] as const;
const TOOL = [
  'kind',
  'idempotentByNature',
  'intent',
  'key',
  'lookup',
  'toolErrors',
  'rejectWhen',
  'resultRef',
  'source',
] as const;
const KEY = ['argument', 'maxLength', 'semantics', 'retention', 'concurrency', 'parameterMatching', 'source'] as const;
const LOOKUP = ['tool', 'arguments', 'items', 'match', 'consistencyDelay', 'lateApplyBound', 'source'] as const;
const KINDS: readonly FenceSideEffect[] = ['create', 'send', 'set', 'upsert', 'delete', 'charge', 'async-job'];
const DURATION = /^\d+(ms|s|m|h|d)$/;

function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return d[b.length]!;
}

function strict(where: string, value: unknown, known: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new FenceConfigError(`${where} must be an object`);
  for (const k of Object.keys(value)) {
    if (known.includes(k)) continue;
    const near = known
      .map((n) => [n, distance(k.toLowerCase(), n.toLowerCase())] as const)
      .sort((x, y) => x[1] - y[1])[0];
    const hint = near && near[1] <= Math.max(2, Math.floor(k.length / 3)) ? ` (did you mean "${near[0]}"?)` : '';
    throw new FenceConfigError(`${where}: unknown key "${k}"${hint}; known: ${known.join(', ')}`);
  }
  return value as Record<string, unknown>;
}

const str = (where: string, v: unknown): string => {
  if (typeof v !== 'string' || v.trim() === '') throw new FenceConfigError(`${where} must be a non-empty string`);
  return v;
};
const posInt = (where: string, v: unknown): number => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
    throw new FenceConfigError(`${where} must be a positive integer`);
  return v;
};
const oneOf = <T extends string>(where: string, v: unknown, allowed: readonly T[]): T => {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v))
    throw new FenceConfigError(`${where} must be one of ${allowed.join(', ')}`);
  return v as T;
};

/** Validates a parsed fence file strictly: unknown keys are errors, not ignored. */
export function parseFenceConfig(raw: unknown, baseDir = process.cwd()): FenceConfig {
  const top = strict('fence', raw, TOP);
  const name = str('name', top.name);
  if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(name))
    throw new FenceConfigError('name must be an identifier such as "orders" (letters, digits, _ and -)');
  const ledger = str('ledger', top.ledger);
  const timeoutMs = top.timeoutMs === undefined ? 10_000 : posInt('timeoutMs', top.timeoutMs);
  let policy: FencePolicy | undefined;
  if (top.policy !== undefined) {
    const p = strict('policy', top.policy, POLICY);
    policy = Object.fromEntries(Object.entries(p).map(([k, v]) => [k, posInt(`policy.${k}`, v)])) as FencePolicy;
  }
  const toolsRaw = strict('tools', top.tools, Object.keys((top.tools as object | null) ?? {}));
  if (Object.keys(toolsRaw).length === 0) throw new FenceConfigError('tools: name at least one upstream tool to fence');
  const tools: Record<string, FenceToolConfig> = {};
  for (const [toolName, t] of Object.entries(toolsRaw)) tools[toolName] = parseTool(`tools.${toolName}`, t);
  const env = top.env === undefined ? undefined : parseEnv(top.env);
  return Object.freeze({
    name,
    ledger,
    ...(top.handoffs !== undefined ? { handoffs: str('handoffs', top.handoffs) } : {}),
    timeoutMs,
    ...(policy ? { policy } : {}),
    tools,
    ...(env ? { env } : {}),
    baseDir,
  });
}

function parseEnv(raw: unknown): Record<string, string | null> {
  const env = strict('env', raw, Object.keys((raw as object | null) ?? {}));
  for (const [k, v] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new FenceConfigError(`env: "${k}" is not a variable name`);
    if (v !== null && typeof v !== 'string')
      throw new FenceConfigError(`env.${k} must be a string (set it) or null (remove it)`);
  }
  return env as Record<string, string | null>;
}

function parseTool(where: string, raw: unknown): FenceToolConfig {
  const t = strict(where, raw, TOOL);
  const kind = oneOf(`${where}.kind`, t.kind, KINDS);
  if (!Array.isArray(t.intent) || t.intent.length === 0)
    throw new FenceConfigError(`${where}.intent must list at least one argument path that names the business intent`);
  const intent = t.intent.map((p, i) => str(`${where}.intent[${i}]`, p));
  const out: Record<string, unknown> = { kind, intent };
  if (t.idempotentByNature !== undefined) {
    if (typeof t.idempotentByNature !== 'boolean')
      throw new FenceConfigError(`${where}.idempotentByNature must be true or false`);
    out.idempotentByNature = t.idempotentByNature;
  }
  if (t.toolErrors !== undefined)
    out.toolErrors = oneOf(`${where}.toolErrors`, t.toolErrors, ['rejected', 'unknown'] as const);
  if (t.rejectWhen !== undefined) {
    if (!Array.isArray(t.rejectWhen))
      throw new FenceConfigError(`${where}.rejectWhen must be a list of regular expressions`);
    out.rejectWhen = t.rejectWhen.map((r, i) => {
      const s = str(`${where}.rejectWhen[${i}]`, r);
      try {
        new RegExp(s);
      } catch {
        throw new FenceConfigError(`${where}.rejectWhen[${i}] is not a valid regular expression`);
      }
      return s;
    });
  }
  if (t.resultRef !== undefined) out.resultRef = str(`${where}.resultRef`, t.resultRef);
  if (t.source !== undefined) out.source = str(`${where}.source`, t.source);
  if (t.key !== undefined) {
    const k = strict(`${where}.key`, t.key, KEY);
    const key: Record<string, unknown> = { argument: str(`${where}.key.argument`, k.argument) };
    if (k.maxLength !== undefined) key.maxLength = posInt(`${where}.key.maxLength`, k.maxLength);
    if (k.semantics !== undefined)
      key.semantics = oneOf(`${where}.key.semantics`, k.semantics, ['replays', 'rejects-duplicate', 'none'] as const);
    if (k.retention !== undefined) {
      const r = str(`${where}.key.retention`, k.retention);
      if (!DURATION.test(r))
        throw new FenceConfigError(`${where}.key.retention must be a duration such as 24h, 30m or 90s`);
      key.retention = r;
    }
    if (k.concurrency !== undefined)
      key.concurrency = oneOf(`${where}.key.concurrency`, k.concurrency, [
        'rejects-in-progress',
        'waits-then-replays',
        'duplicates',
      ] as const);
    if (k.parameterMatching !== undefined)
      key.parameterMatching = oneOf(`${where}.key.parameterMatching`, k.parameterMatching, [
        'mismatch-error',
        'replay-anyway',
        'none',
      ] as const);
    if (k.source !== undefined) key.source = str(`${where}.key.source`, k.source);
    // The fence sets the key argument and drops the caller's: an intent cannot be made of it.
    if (
      intent.some(
        (p) => p === key.argument || p.startsWith(`${key.argument}.`) || (key.argument as string).startsWith(`${p}.`),
      )
    )
      throw new FenceConfigError(
        `${where}.intent cannot name the key argument ${key.argument}: the fence sets it, the caller's value is dropped`,
      );
    out.key = key;
  }
  if (t.lookup !== undefined) {
    const l = strict(`${where}.lookup`, t.lookup, LOOKUP);
    const match = strict(`${where}.lookup.match`, l.match, Object.keys((l.match as object | null) ?? {}));
    if (Object.keys(match).length === 0)
      throw new FenceConfigError(`${where}.lookup.match must pair at least one item path with an argument path`);
    for (const [k, v] of Object.entries(match)) str(`${where}.lookup.match.${k}`, v);
    const lookup: Record<string, unknown> = {
      tool: str(`${where}.lookup.tool`, l.tool),
      items: typeof l.items === 'string' ? l.items : str(`${where}.lookup.items`, l.items),
      match,
    };
    if (l.arguments !== undefined)
      lookup.arguments = strict(
        `${where}.lookup.arguments`,
        l.arguments,
        Object.keys((l.arguments as object | null) ?? {}),
      );
    if (l.consistencyDelay !== undefined) {
      if (l.consistencyDelay === null || l.consistencyDelay === 0 || l.consistencyDelay === '0')
        lookup.consistencyDelay = null;
      else {
        const d = str(`${where}.lookup.consistencyDelay`, l.consistencyDelay);
        if (!DURATION.test(d))
          throw new FenceConfigError(`${where}.lookup.consistencyDelay must be 0 or a duration such as 2s`);
        lookup.consistencyDelay = d;
      }
    }
    if (l.lateApplyBound !== undefined) {
      const d = str(`${where}.lookup.lateApplyBound`, l.lateApplyBound);
      if (!DURATION.test(d))
        throw new FenceConfigError(`${where}.lookup.lateApplyBound must be a duration such as 30s`);
      lookup.lateApplyBound = d;
    }
    if (l.source !== undefined) lookup.source = str(`${where}.lookup.source`, l.source);
    out.lookup = lookup;
  }
  return out as unknown as FenceToolConfig;
}

/** Reads a fence file (JSON or YAML). */
export function loadFenceConfig(path: string): FenceConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new FenceConfigError(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let raw: unknown;
  try {
    raw = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new FenceConfigError(
      `${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(e as Error).message.split('\n')[0]}`,
    );
  }
  return parseFenceConfig(raw, dirname(resolve(path)));
}
