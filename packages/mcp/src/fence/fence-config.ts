import { dirname, resolve } from 'node:path';
import { checkSchema, configSchema, findInlineCredentials, readDataFile } from '@retrysafe/config';
import type { JsonSchema } from '@retrysafe/contract';
import { DURATION_PATTERN, withinIntent } from '@retrysafe/contract/rules';
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
  ({ type: 'string', pattern: DURATION_PATTERN, description: `a duration such as ${example}` }) as const;
/** Any JSON value: the upstream's default for an argument a call leaves out. */
const providerDefault = {};
const closed = <const P, const R extends readonly string[] = []>(properties: P, required?: R) =>
  ({ type: 'object', additionalProperties: false, properties, required: (required ?? []) as R }) as const;

/** The type of what a schema below accepts, for the keywords it uses. */
type Infer<S> = S extends { enum: readonly (infer E)[] }
  ? E
  : S extends { anyOf: readonly (infer A)[] }
    ? Infer<A>
    : S extends { type: 'integer' }
      ? number
      : S extends { type: 'boolean' }
        ? boolean
        : S extends { type: 'string' }
          ? string
          : S extends { type: 'array'; items: infer I }
            ? readonly Infer<I>[]
            : S extends { properties: infer P; required: readonly (infer R)[] }
              ? { readonly [K in keyof P as K extends R ? K : never]: Infer<P[K]> } & {
                  readonly [K in keyof P as K extends R ? never : K]?: Infer<P[K]>;
                }
              : S extends { additionalProperties: infer A extends object }
                ? Readonly<Record<string, Infer<A>>>
                : S extends { type: readonly ['string', 'null'] }
                  ? string | null
                  : Readonly<Record<string, unknown>>;

/** The fence file's shape (its keys are documented in docs/fence-an-mcp-server.md); `parseFenceConfig` adds the checks
 * a schema cannot say. A pattern's description is shown when a value does not fit it. */
const FENCE_SCHEMA = closed(
  {
    name: { ...str, pattern: '^[A-Za-z][A-Za-z0-9_-]*$', description: 'an identifier such as "orders"' },
    account: { ...str, maxLength: 200 },
    ledger: str,
    handoffs: str,
    timeoutMs: posInt,
    policy: (configSchema.properties as JsonSchema).policy as JsonSchema,
    tools: {
      type: 'object',
      minProperties: 1,
      additionalProperties: closed(
        {
          kind: { enum: ['create', 'send', 'set', 'upsert', 'delete', 'charge', 'async-job'] },
          idempotentByNature: { type: 'boolean' },
          intent: { ...strings, minItems: 1 },
          optionalIntent: strings,
          // These two are judged with the card they go onto, by the contract's card validator (evidence, steps, paths,
          // where a provider's default may stand); defineAdapter checks a default against the tool's input schema.
          normalize: {
            type: 'array',
            items: closed({ field: str, steps: strings, providerDefault, source: str, evidence: str }, [
              'field',
              'steps',
              'source',
            ]),
          },
          paramComparison: {
            type: 'array',
            items: closed({ field: str, compare: str, steps: strings, providerDefault, source: str, evidence: str }, [
              'field',
              'compare',
              'source',
            ]),
          },
          key: closed(
            {
              argument: str,
              maxLength: posInt,
              semantics: { enum: ['replays', 'rejects-duplicate', 'none'] },
              retention: duration('24h, 30m or 90s'),
              concurrency: { enum: ['rejects-in-progress', 'waits-then-replays', 'duplicates'] },
              parameterMatching: { enum: ['mismatch-error', 'replay-anyway', 'none'] },
              conflictWhen: strings,
              inProgressWhen: strings,
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
              more: str,
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

/** The fence file: which upstream tools run through the runner, and what is known of each; relative paths resolve
 * against `baseDir`, the folder it was read from. */
export type FenceConfig = Omit<Infer<typeof FENCE_SCHEMA>, 'timeoutMs' | 'policy'> & {
  readonly timeoutMs: number;
  readonly policy?: PolicyOverrides;
  readonly baseDir: string;
};
export type FenceToolConfig = FenceConfig['tools'][string];

/** The characters MCP allows in a tool name (2025-11-25, Tools, "Tool Names"); none of them is the `:` that ends the
 * operation's name in its ids. */
const TOOL_NAME = /^[A-Za-z0-9_.-]+$/;

/** The config file's credential rule where a fence file holds values (not argument names or paths). A variable's
 * name says nothing here (AUTH_MODE is a setting): its value is checked; null removes it. */
function inlineCredentials(c: Omit<FenceConfig, 'baseDir' | 'timeoutMs'>): string[] {
  const tools = Object.entries(c.tools).map(([name, t]) => [name, { lookup: { arguments: t.lookup?.arguments } }]);
  const problems = findInlineCredentials({ ledger: c.ledger, handoffs: c.handoffs, tools: Object.fromEntries(tools) });
  for (const [name, value] of Object.entries(c.env ?? {}))
    if (typeof value === 'string') problems.push(...findInlineCredentials(value).map((p) => `env.${name}${p}`));
  return problems;
}

/** A key the card says the upstream answers with an error when it already holds a request (or one in flight): with tool
 * errors read as rejections, that answer would say "not applied", and a person would start a second object. */
function unnamedKeyAnswers(name: string, t: FenceToolConfig): string[] {
  if (t.toolErrors !== 'rejected' || !t.key) return [];
  const k = t.key;
  const needs = (when: string, fact: string) =>
    `tools.${name}.key.${when}: its ${fact} says the upstream answers an error then, which toolErrors rejected would read as not applied (a new operation would make a second object): name its text`;
  const problems: string[] = [];
  if (!k.conflictWhen?.length) {
    if (k.semantics === 'rejects-duplicate') problems.push(needs('conflictWhen', 'semantics rejects-duplicate'));
    if (k.parameterMatching === 'mismatch-error')
      problems.push(needs('conflictWhen', 'parameterMatching mismatch-error'));
  }
  if (k.concurrency === 'rejects-in-progress' && !k.inProgressWhen?.length)
    problems.push(needs('inProgressWhen', 'concurrency rejects-in-progress'));
  return problems;
}

/** Checks a parsed fence file strictly (unknown keys are errors) and fills its defaults; `source` names the file. */
export function parseFenceConfig(raw: unknown, baseDir = process.cwd(), source?: string): FenceConfig {
  const at = source ? `${source}: ` : '';
  if (raw && typeof raw === 'object' && 'adapters' in raw && !('tools' in raw))
    throw new FenceConfigError(
      `${at}a retrysafe config (it names adapters, no tools): serve its operations with retrysafe-mcp --config ${source ?? '<file>'}`,
    );
  const problems = checkSchema(raw, FENCE_SCHEMA);
  const c = raw as Omit<FenceConfig, 'baseDir' | 'timeoutMs'> & { timeoutMs?: number };
  if (problems.length === 0) {
    problems.push(...inlineCredentials(c));
    for (const k of Object.keys(c.env ?? {}))
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) problems.push(`env: "${k}" is not a variable name`);
    for (const [name, t] of Object.entries(c.tools)) {
      // `<name>.<tool>` is the business operation, and `<operation>:<32 hex>` its ids (at most 200 characters).
      if (!TOOL_NAME.test(name) || c.name.length + name.length > 166)
        problems.push(
          `tools.${name}: cannot name the business operation ${c.name}.<tool> (letters, digits, _ - and ., ${166 - c.name.length} characters at most)`,
        );
      // Every call would miss its operation: a JavaScript object keeps no own key of this name by assignment.
      if (name === '__proto__')
        problems.push('tools.__proto__: cannot be fenced (not a key an operation can be kept by)');
      const patterns = {
        rejectWhen: t.rejectWhen,
        'key.conflictWhen': t.key?.conflictWhen,
        'key.inProgressWhen': t.key?.inProgressWhen,
      };
      for (const [when, list] of Object.entries(patterns))
        for (const [i, r] of (list ?? []).entries()) {
          try {
            new RegExp(r);
          } catch {
            problems.push(`tools.${name}.${when}[${i}] is not a valid regular expression`);
          }
        }
      problems.push(...unnamedKeyAnswers(name, t));
      // The fence sets the key argument and drops the caller's: an intent cannot be made of it.
      const a = t.key?.argument;
      if (a && t.intent.some((p) => p === a || p.startsWith(`${a}.`) || a.startsWith(`${p}.`)))
        problems.push(
          `tools.${name}.intent cannot name the key argument ${a}: the fence sets it, the caller's value is dropped`,
        );
      // A lookup matches by every intent argument (at or beneath a match argument), or by the key argument, which is
      // this operation's alone.
      const matched = Object.values(t.lookup?.match ?? {});
      const byKey = a !== undefined && withinIntent(a, matched);
      const unmatched = t.lookup && !byKey ? t.intent.filter((p) => !withinIntent(p, matched)) : [];
      if (unmatched.length > 0)
        problems.push(
          `tools.${name}.lookup.match leaves out the intent argument ${unmatched.join(', ')}: an item of another operation that differs only there would be taken for this one, which would then never be made; match it too, or match the key argument`,
        );
    }
  }
  if (problems.length > 0) throw new FenceConfigError(at + problems.join('; '));
  return Object.freeze({ ...c, timeoutMs: c.timeoutMs ?? 10_000, baseDir });
}

/** Reads a fence file (JSON, else YAML), within the config package's file limits. */
export function loadFenceConfig(path: string): FenceConfig {
  return parseFenceConfig(readDataFile(path, !/\.json$/i.test(path)), dirname(resolve(path)), path);
}
