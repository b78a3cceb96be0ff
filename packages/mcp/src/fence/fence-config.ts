import { dirname, resolve } from 'node:path';
import { checkSchema, configSchema, readDataFile } from '@retrysafe/config';
import type { JsonSchema } from '@retrysafe/contract';
import type { SchemaType } from '@retrysafe/contract/provider';
import type { PolicyOverrides } from '@retrysafe/core';

/** A fence file that cannot be used; the message names the path and, for an unknown key, the nearest known one. */
export class FenceConfigError extends Error {
  override readonly name = 'FenceConfigError';
  readonly code = 'RETRYSAFE_FENCE_CONFIG';
}

const str = { type: 'string', minLength: 1 } as const;
const posInt = { type: 'integer', exclusiveMinimum: 0 } as const;
const strings = { type: 'array', items: str } as const;
const duration = (example: string) =>
  ({ type: 'string', pattern: '^\\d+(ms|s|m|h|d)$', description: `a duration such as ${example}` }) as const;
const closed = <const P, const R extends readonly string[] = []>(properties: P, required?: R) =>
  ({ type: 'object', additionalProperties: false, properties, required: (required ?? []) as R }) as const;

/** One fenced tool: what is known of it (the rest is `unknown`). */
const TOOL_SCHEMA = closed(
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
);
/** The schema's map types as their values' (`match` maps item paths to argument paths). */
export type FenceToolConfig = SchemaType<typeof TOOL_SCHEMA> & {
  readonly lookup?: { readonly match: Readonly<Record<string, string>> };
};

/** The fence file's shape; `parseFenceConfig` adds the checks a schema cannot say. */
const FENCE_SCHEMA = closed(
  {
    name: { ...str, pattern: '^[A-Za-z][A-Za-z0-9_-]*$', description: 'an identifier such as "orders"' },
    ledger: str,
    handoffs: str,
    timeoutMs: posInt,
    policy: (configSchema.properties as JsonSchema).policy as JsonSchema,
    tools: { type: 'object', minProperties: 1, additionalProperties: TOOL_SCHEMA },
    env: { type: 'object', additionalProperties: { type: ['string', 'null'] } },
  },
  ['name', 'ledger', 'tools'],
);

/** The fence file: which upstream tools run through the runner, and what is known of each; `baseDir` is the folder
 * it was read from (relative paths resolve against it). */
export type FenceConfig = SchemaType<typeof FENCE_SCHEMA> & {
  readonly timeoutMs: number;
  readonly policy?: PolicyOverrides;
  readonly tools: Readonly<Record<string, FenceToolConfig>>;
  readonly env?: Readonly<Record<string, string | null>>;
  readonly baseDir: string;
};

/** Checks a parsed fence file strictly (unknown keys are errors) and fills its defaults. */
export function parseFenceConfig(raw: unknown, baseDir = process.cwd()): FenceConfig {
  const problems = checkSchema(raw, FENCE_SCHEMA);
  const c = raw as FenceConfig;
  if (problems.length === 0) {
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
  }
  if (problems.length > 0) throw new FenceConfigError(problems.join('; '));
  return Object.freeze({ ...c, timeoutMs: c.timeoutMs ?? 10_000, baseDir });
}

/** Reads a fence file (JSON, else YAML), within the config package's file limits. */
export function loadFenceConfig(path: string): FenceConfig {
  return parseFenceConfig(readDataFile(path, !/\.json$/i.test(path)), dirname(resolve(path)));
}
