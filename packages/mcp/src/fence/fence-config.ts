import { dirname, resolve } from 'node:path';
import {
  checkSchema,
  DataSyntaxError,
  FileLimitError,
  parseDataText,
  readTextFile,
  type SchemaNode,
} from '@retrysafe/config';

/** The fence file: which upstream tools run through the runner, and what is known of each (the rest is `unknown`). */
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
  /** Changes to the fence's environment for a stdio upstream: a string sets a variable, `null` removes it. */
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
  /** How long after the fence gave up the upstream may still apply a call; unknown: "not found" proves nothing. */
  readonly lateApplyBound?: string;
  readonly source?: string;
}

/** A fence file that cannot be used; the message names the path and, for an unknown key, the nearest known one. */
export class FenceConfigError extends Error {
  override readonly name = 'FenceConfigError';
  readonly code = 'RETRYSAFE_FENCE_CONFIG';
}

const str: SchemaNode = { type: 'string', minLength: 1 };
const posInt: SchemaNode = { type: 'integer', exclusiveMinimum: 0 };
const strings: SchemaNode = { type: 'array', items: str };
const duration = (example: string): SchemaNode => ({
  type: 'string',
  pattern: '^\\d+(ms|s|m|h|d)$',
  description: `a duration such as ${example}`,
});
const closed = (properties: Record<string, SchemaNode>, required: string[] = []): SchemaNode => ({
  type: 'object',
  additionalProperties: false,
  properties,
  required,
});

/** The fence file's shape; `parseFenceConfig` adds the checks a schema cannot say. */
const FENCE_SCHEMA: SchemaNode = closed(
  {
    name: { ...str, pattern: '^[A-Za-z][A-Za-z0-9_-]*$', description: 'an identifier such as "orders"' },
    ledger: str,
    handoffs: str,
    timeoutMs: posInt,
    policy: closed(
      Object.fromEntries(
        ['maxAttempts', 'maxElapsedMs', 'baseMs', 'capMs', 'lookupWindowMs', 'leaseMs', 'waitForOtherMs'].map((k) => [
          k,
          posInt,
        ]),
      ),
    ),
    tools: {
      type: 'object',
      minProperties: 1,
      additionalProperties: closed(
        {
          kind: { enum: ['create', 'send', 'set', 'upsert', 'delete', 'charge', 'async-job'] },
          idempotentByNature: { type: 'boolean' },
          intent: { ...strings, minItems: 1, description: 'argument paths that name the business intent' },
          key: closed(
            {
              argument: str,
              maxLength: posInt,
              semantics: { enum: ['replays', 'rejects-duplicate', 'none'] },
              retention: duration('24h, 30m or 90s'),
              concurrency: { enum: ['rejects-in-progress', 'waits-then-replays', 'duplicates'] },
              parameterMatching: { enum: ['mismatch-error', 'replay-anyway', 'none'] },
              source: str,
            },
            ['argument'],
          ),
          lookup: closed(
            {
              tool: str,
              arguments: { type: 'object' },
              items: { type: 'string' },
              match: { type: 'object', minProperties: 1, additionalProperties: str },
              consistencyDelay: { anyOf: [{ enum: [null, 0, '0'] }, duration('2s')] },
              lateApplyBound: duration('30s'),
              source: str,
            },
            ['tool', 'items', 'match'],
          ),
          toolErrors: { enum: ['rejected', 'unknown'] },
          rejectWhen: strings,
          resultRef: str,
          source: str,
        },
        ['kind', 'intent'],
      ),
    },
    env: { type: 'object', additionalProperties: { type: ['string', 'null'] } },
  },
  ['name', 'ledger', 'tools'],
);

/** Checks a parsed fence file strictly (unknown keys are errors) and fills its defaults. */
export function parseFenceConfig(raw: unknown, baseDir = process.cwd()): FenceConfig {
  const problems = checkSchema(raw, FENCE_SCHEMA, FENCE_SCHEMA);
  if (problems.length === 0) {
    const c = raw as Omit<FenceConfig, 'baseDir' | 'timeoutMs'> & { timeoutMs?: number };
    for (const k of Object.keys(c.env ?? {}))
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) problems.push(`env: "${k}" is not a variable name`);
    for (const [name, t] of Object.entries(c.tools)) {
      for (const [i, r] of (t.rejectWhen ?? []).entries()) {
        try {
          new RegExp(r);
        } catch {
          problems.push(`tools.${name}.rejectWhen[${i}] is not a valid regular expression`);
        }
      }
      // The fence sets the key argument and drops the caller's: an intent cannot be made of it.
      const a = t.key?.argument;
      if (a && t.intent.some((p) => p === a || p.startsWith(`${a}.`) || a.startsWith(`${p}.`)))
        problems.push(
          `tools.${name}.intent cannot name the key argument ${a}: the fence sets it, the caller's value is dropped`,
        );
    }
    if (problems.length === 0) {
      const tools = Object.fromEntries(
        Object.entries(c.tools).map(([name, t]) => [
          name,
          t.lookup && [0, '0'].includes(t.lookup.consistencyDelay as string)
            ? { ...t, lookup: { ...t.lookup, consistencyDelay: null } }
            : t,
        ]),
      );
      return Object.freeze({ ...c, timeoutMs: c.timeoutMs ?? 10_000, tools, baseDir });
    }
  }
  throw new FenceConfigError(problems.join('; '));
}

/** Reads a fence file (JSON, else YAML), within the config package's file limits. */
export function loadFenceConfig(path: string): FenceConfig {
  const yaml = !/\.json$/i.test(path);
  let raw: unknown;
  try {
    raw = parseDataText(readTextFile(path), { path, yaml });
  } catch (e) {
    throw new FenceConfigError(
      e instanceof DataSyntaxError
        ? `${path} is not valid ${yaml ? 'YAML' : 'JSON'}: ${e.message.split('\n')[0]}`
        : FileLimitError.isInstance(e)
          ? e.message
          : `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  return parseFenceConfig(raw, dirname(resolve(path)));
}
