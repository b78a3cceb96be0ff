import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suggest } from '@retrysafe/core/suggest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { checkSchema, configSchema } from './index.js';

// The published schema is checked by a real JSON Schema 2020-12 validator (what editors run) and by
// parseConfig's own checker: on every sample they must agree on valid / invalid.
const ajv = new Ajv2020({ allErrors: true, strict: false });
const validate = ajv.compile(configSchema);
const root = dirname(fileURLToPath(import.meta.url));
const example = parseYaml(readFileSync(join(root, '../examples/http-api/retrysafe.yaml'), 'utf8')) as Record<
  string,
  unknown
>;
const readmeYamls = [...readFileSync(join(root, '../README.md'), 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)].map(
  (m) => m[1]!,
);

const valid: [string, unknown][] = [
  ['the docs example (four http operations)', example],
  ['the README example', parseYaml(readmeYamls[0]!)],
  ["the README's own-adapter module entry", parseYaml(readmeYamls.find((y) => y.includes(' module: '))!)],
  ['a minimal config', { adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } } }],
  [
    'dynamodb ledger',
    {
      ledger: { dynamodb: { table: 'retrysafe', region: 'eu-west-1' } },
      adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } },
    },
  ],
  [
    'dynamodb ledger on a local endpoint',
    {
      ledger: { dynamodb: { table: 'retrysafe', endpoint: 'http://127.0.0.1:8000' } },
      adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } },
    },
  ],
  [
    'postgres ledger, policy, redact, $schema',
    {
      $schema: './schema.json',
      ledger: 'postgres://db/rs',
      policy: { maxAttempts: 3, baseMs: 0, capMs: 10 },
      redact: { fields: ['email'] },
      adapters: { hubspot: { accessTokenEnv: 'H', searchSettleMs: null } },
    },
  ],
];
// These adapters take a whole number of milliseconds (the contract's positiveInteger): a fraction is refused here,
// with its path, rather than when the adapter is built. Each with its one required key.
const WHOLE_MS_ADAPTERS = {
  stripe: 'apiKeyEnv',
  msgraph: 'accessTokenEnv',
  slack: 'tokenEnv',
  github: 'tokenEnv',
  hubspot: 'accessTokenEnv',
  resend: 'apiKeyEnv',
};
const withTimeout = (timeoutMs: number) =>
  Object.entries(WHOLE_MS_ADAPTERS).map(([a, key]): [string, unknown] => [
    `${a} timeoutMs ${timeoutMs}`,
    { adapters: { [a]: { [key]: 'K', timeoutMs } } },
  ]);
valid.push(...withTimeout(1500));
const invalid: [string, unknown][] = [
  ...withTimeout(1.5),
  ['ledgr', { ledgr: 'x', adapters: {} }],
  ['dynamodb ledger without a table', { ledger: { dynamodb: { region: 'eu-west-1' } }, adapters: {} }],
  [
    'dynamodb ledger with credentials in the file',
    { ledger: { dynamodb: { table: 'retrysafe', accessKeyId: 'AKIA' } }, adapters: {} },
  ],
  [
    'dynamodb ledger endpoint not a URL',
    { ledger: { dynamodb: { table: 'retrysafe', endpoint: 'localhost:8000' } }, adapters: {} },
  ],
  ['a ledger of another store', { ledger: { redis: { url: 'redis://x' } }, adapters: {} }],
  ['adapter typo', { adapters: { stripe: { apiKeyEnv: 'K', timoutMs: 1 } } }],
  ['maxAttempts 0', { adapters: {}, policy: { maxAttempts: 0 } }],
  ['negative delay', { adapters: {}, policy: { baseMs: -1 } }],
  ['env var with a space', { adapters: { stripe: { apiKeyEnv: 'MY KEY' } } }],
  ['module adapter without module', { adapters: { acme: { export: 'x' } } }],
  [
    'http adapter with a module key',
    { adapters: { acme: { type: 'http', baseUrl: 'http://x', timeoutMs: 1, operations: {}, module: 'x' } } },
  ],
  ['unknown adapter type', { adapters: { acme: { type: 'grpc', module: 'x' } } }],
  ['operations not strings', { adapters: {}, operations: [1] }],
  ['operation without a dot', { adapters: {}, operations: ['stripe'] }],
];
const mutate = (f: (o: Record<string, Record<string, unknown>>) => void): unknown => {
  const copy = structuredClone(example) as {
    adapters: { acme: { operations: Record<string, Record<string, unknown>> } };
  };
  f(copy.adapters.acme.operations);
  return copy;
};
invalid.push(
  ['key travels typo', mutate((o) => void (o['orders.create']!.key = { travels: 'headr', name: 'K' }))],
  ['lookup without match', mutate((o) => void (o['orders.create']!.lookup = { method: 'search', path: '/o' }))],
  ['GET is not state-changing', mutate((o) => void (o['orders.create']!.method = 'GET'))],
  ['path without a slash', mutate((o) => void (o['orders.create']!.path = 'orders'))],
  [
    'error rule outcome typo',
    mutate(
      (o) => void ((o['orders.create']!.errors as { rules: Record<string, unknown>[] }).rules[0]!.outcome = 'rejectd'),
    ),
  ],
  ['drill pattern typo', mutate((o) => void (o['orders.create']!.drill = { pattern: 'ietf' }))],
);

describe('schema.json is a real JSON Schema and agrees with parseConfig’s checker', () => {
  it.each(valid)('valid: %s', (_name, value) => {
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
    expect(checkSchema(value, configSchema)).toEqual([]);
  });
  it.each(invalid)('invalid: %s', (_name, value) => {
    expect(validate(value)).toBe(false);
    expect(checkSchema(value, configSchema).length).toBeGreaterThan(0);
  });

  it('suggests only close keys', () => {
    expect(suggest('ledgr', ['ledger', 'adapters'])).toBe(' (did you mean "ledger"?)');
    expect(suggest('Ledger', ['ledger'])).toBe(' (did you mean "ledger"?)');
    expect(suggest('xyz', ['ledger', 'adapters', 'policy'])).toBe('');
    expect(suggest('maxAtempts', ['maxAttempts', 'maxElapsedMs'])).toBe(' (did you mean "maxAttempts"?)');
  });
});
