import type { SchemaNode } from './schema-check.js';

/**
 * The JSON Schema of a retrysafe config file. It is published as `@retrysafe/config/schema.json`
 * (point `$schema` at it for completion in an editor) and it is also what `parseConfig` checks, so
 * the two cannot drift. Unknown keys are errors everywhere except inside `options` (a module
 * adapter's own options), `paramsSchema` and `card` (checked by the contract's `validateCard`).
 */

const str = (description: string, extra: Partial<SchemaNode> = {}): SchemaNode => ({
  type: 'string',
  minLength: 1,
  description,
  ...extra,
});
const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]*$';
const envVar = (description: string): SchemaNode => str(description, { pattern: ENV_NAME });
const ms = (description: string, min: 'zero' | 'positive' = 'zero'): SchemaNode => ({
  type: 'number',
  description,
  ...(min === 'zero' ? { minimum: 0 } : { exclusiveMinimum: 0 }),
});
const strings: SchemaNode = { type: 'array', items: { type: 'string', minLength: 1 } };

const timeoutMs = ms('client timeout per request, in milliseconds', 'positive');
const baseUrl = str('origin (and optional base path) of the API, e.g. https://api.example.com/v1', {
  pattern: '^https?://',
});

export const HTTP_PATTERNS = ['ietf-idempotency-key', 'async-request-reply', 'etag', 'client-token'] as const;
export const POLICY_KEYS = [
  'maxAttempts',
  'maxElapsedMs',
  'baseMs',
  'capMs',
  'retryAfterCapMs',
  'lookupWindowMs',
  'leaseMs',
  'waitForOtherMs',
] as const;

const where: SchemaNode = {
  type: 'object',
  description:
    'dot path in the item ⇒ expected value; `{name}` is a param, `{key}` the provider key, `{businessOperationId}` the id',
  additionalProperties: true,
};

export const configSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://unpkg.com/@retrysafe/config/schema.json',
  title: 'retrysafe config',
  description:
    'The ledger, the adapters and the operations retrysafe exposes. Credentials come from environment variables only.',
  type: 'object',
  additionalProperties: false,
  required: ['adapters'],
  properties: {
    $schema: { type: 'string', description: 'this schema, for editor completion' },
    ledger: {
      description:
        'a SQLite file path (relative to this file; default ./retrysafe.db when the key is absent), a postgres:// URL, or { dynamodb: { table } }. A ledger named here that cannot be used is an error, never a fallback.',
      oneOf: [str('a SQLite file path or a postgres:// URL'), { $ref: '#/$defs/dynamodbLedger' }],
    },
    handoffs: str('JSONL file the handoff packets are appended to'),
    policy: {
      type: 'object',
      description: 'retry policy overrides, applied to every operation (milliseconds)',
      additionalProperties: false,
      properties: {
        maxAttempts: { type: 'integer', minimum: 1, description: 'attempts per operation, the first included' },
        maxElapsedMs: ms('time budget per operation', 'positive'),
        baseMs: ms('backoff base'),
        capMs: ms('backoff cap (≥ baseMs)'),
        retryAfterCapMs: ms('longest Retry-After honoured before handing off'),
        lookupWindowMs: ms('how long lookups may keep saying "cannot tell" before handing off'),
        leaseMs: ms('claim lease of a worker', 'positive'),
        waitForOtherMs: ms('how long to wait for another worker holding the operation'),
      },
    },
    redact: {
      type: 'object',
      additionalProperties: false,
      properties: { fields: { ...strings, description: 'extra field names redacted from receipts and packets' } },
    },
    adapters: {
      type: 'object',
      description: 'adapters by name; the name is what `operations` entries start with',
      properties: {
        stripe: { $ref: '#/$defs/stripe' },
        msgraph: { $ref: '#/$defs/msgraph' },
        hubspot: { $ref: '#/$defs/hubspot' },
        resend: { $ref: '#/$defs/resend' },
        github: { $ref: '#/$defs/github' },
        slack: { $ref: '#/$defs/slack' },
        sandbox: { $ref: '#/$defs/sandbox' },
      },
      additionalProperties: { oneOf: [{ $ref: '#/$defs/moduleAdapter' }, { $ref: '#/$defs/httpAdapter' }] },
    },
    operations: {
      type: 'array',
      description:
        'operations to expose, as "<adapter name>.<operation>" (e.g. stripe.paymentIntents.create); default: all of every configured adapter. An entry that names no operation is an error.',
      items: {
        type: 'string',
        pattern: '^[A-Za-z][A-Za-z0-9_-]*\\.[A-Za-z0-9_.-]+$',
        description: '<adapter name>.<operation>',
      },
    },
  },
  $defs: {
    dynamodbLedger: {
      type: 'object',
      description:
        "a DynamoDB table (create it with ensureTable from @retrysafe/ledger-dynamodb); credentials come from the environment or the AWS SDK's default chain, never from this file",
      additionalProperties: false,
      required: ['dynamodb'],
      properties: {
        dynamodb: {
          type: 'object',
          additionalProperties: false,
          required: ['table'],
          properties: {
            table: str('the table name', { minLength: 3 }),
            region: str("AWS region (default: the SDK's, e.g. AWS_REGION)"),
            endpoint: str('another endpoint, e.g. a local DynamoDB at http://127.0.0.1:8000', {
              pattern: '^https?://',
            }),
          },
        },
      },
    },
    stripe: {
      type: 'object',
      additionalProperties: false,
      required: ['apiKeyEnv'],
      properties: { apiKeyEnv: envVar('environment variable holding the Stripe secret key'), baseUrl, timeoutMs },
    },
    msgraph: {
      type: 'object',
      additionalProperties: false,
      required: ['accessTokenEnv'],
      properties: { accessTokenEnv: envVar('environment variable holding the Graph access token'), baseUrl, timeoutMs },
    },
    slack: {
      type: 'object',
      additionalProperties: false,
      required: ['tokenEnv'],
      properties: { tokenEnv: envVar('environment variable holding the Slack bot token'), baseUrl, timeoutMs },
    },
    github: {
      type: 'object',
      additionalProperties: false,
      required: ['tokenEnv'],
      properties: { tokenEnv: envVar('environment variable holding the GitHub token'), baseUrl, timeoutMs },
    },
    hubspot: {
      type: 'object',
      additionalProperties: false,
      required: ['accessTokenEnv'],
      properties: {
        accessTokenEnv: envVar('environment variable holding the HubSpot private-app token'),
        baseUrl,
        timeoutMs,
        searchSettleMs: {
          type: ['number', 'null'],
          minimum: 0,
          description: 'how long a HubSpot search may lag a write',
        },
      },
    },
    resend: {
      type: 'object',
      additionalProperties: false,
      required: ['apiKeyEnv'],
      properties: { apiKeyEnv: envVar('environment variable holding the Resend API key'), baseUrl, timeoutMs },
    },
    sandbox: {
      type: 'object',
      additionalProperties: false,
      required: ['baseUrl'],
      properties: {
        baseUrl,
        timeoutMs,
        behaviour: { type: 'object', description: 'the sandbox behaviour the card describes' },
      },
    },
    moduleAdapter: {
      type: 'object',
      description: 'an adapter of your own: a module exporting a factory (options) => AdapterV1',
      additionalProperties: false,
      required: ['module'],
      properties: {
        type: { const: 'module', default: 'module' },
        module: str('path (relative to this file) or package name of the module'),
        export: str('the factory export (default: default)'),
        options: { type: 'object', description: 'passed to the factory' },
        secretsFromEnv: {
          type: 'object',
          description: 'option ⇒ environment variable; a dotted option (headers.Authorization) sets the nested option',
          additionalProperties: envVar('environment variable name'),
        },
      },
    },
    httpAdapter: {
      type: 'object',
      description: 'an HTTP API declared as data (@retrysafe/http): no code',
      additionalProperties: false,
      required: ['type', 'baseUrl', 'timeoutMs', 'operations'],
      properties: {
        type: { const: 'http' },
        provider: str('provider name in cards and tool names (default: the adapter name)', {
          pattern: '^[A-Za-z][A-Za-z0-9_-]*$',
        }),
        baseUrl,
        timeoutMs,
        headers: {
          type: 'object',
          description: 'static headers that are not credentials',
          additionalProperties: { type: 'string' },
        },
        headersFromEnv: {
          type: 'object',
          description: 'header ⇒ environment variable holding its value (e.g. Authorization: ACME_AUTH)',
          additionalProperties: envVar('environment variable name'),
        },
        operations: { type: 'object', additionalProperties: { $ref: '#/$defs/httpOperation' } },
      },
    },
    httpOperation: {
      type: 'object',
      additionalProperties: false,
      required: ['description', 'method', 'path', 'key', 'card', 'lookup', 'errors'],
      properties: {
        description: str('what the operation does, for people and agents'),
        method: { enum: ['POST', 'PUT', 'PATCH', 'DELETE'] },
        path: str('path template: {param}, {key}, {businessOperationId}', { pattern: '^/' }),
        key: { $ref: '#/$defs/httpKey' },
        card: { anyOf: [str('a JSON or YAML file holding the card, relative to this file'), { $ref: '#/$defs/card' }] },
        lookup: { $ref: '#/$defs/httpLookup' },
        precondition: { $ref: '#/$defs/httpPrecondition' },
        errors: { $ref: '#/$defs/httpErrors' },
        asyncReply: { type: 'boolean', description: 'a 202 with Location is in-progress with that status URL' },
        body: {
          type: ['object', 'array'],
          description:
            'JSON body template: a string "{param}" is replaced by the value (any type), "{key}", "{businessOperationId}" too; default: the params minus path placeholders',
        },
        refPath: str('dot path of the provider object id in a success body'),
        requestIdHeader: str('response header with the provider request id'),
        paramsSchema: { type: 'object', description: 'JSON Schema of the params' },
        sensitiveFields: strings,
        drill: { $ref: '#/$defs/httpDrill' },
      },
    },
    httpKey: {
      oneOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['travels', 'name'],
          properties: {
            travels: { const: 'header' },
            name: str('header name, e.g. Idempotency-Key'),
            encoding: { enum: ['raw', 'sf-string'] },
            rule: { $ref: '#/$defs/keyRule' },
          },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['travels', 'name'],
          properties: {
            travels: { const: 'body' },
            name: str('top-level body field'),
            rule: { $ref: '#/$defs/keyRule' },
          },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['travels', 'name'],
          properties: { travels: { const: 'query' }, name: str('query parameter'), rule: { $ref: '#/$defs/keyRule' } },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['travels'],
          properties: { travels: { const: 'none' } },
        },
      ],
    },
    keyRule: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxLength: { type: 'integer', minimum: 1 },
        charset: str('character class body, e.g. A-Za-z0-9_-'),
        prefix: { type: 'string' },
      },
    },
    match: {
      type: 'object',
      additionalProperties: false,
      required: ['where'],
      properties: {
        items: {
          type: 'string',
          description: 'dot path of the list in the response body (omit when the body is the list)',
        },
        where,
      },
    },
    httpLookup: {
      oneOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['method', 'path'],
          properties: {
            method: { const: 'get-by-key' },
            path: str('GET path template', { pattern: '^/' }),
            applied: {
              type: 'object',
              additionalProperties: false,
              required: ['where'],
              properties: { where },
              description: 'when the resource shows this operation',
            },
          },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['method', 'status'],
          properties: {
            method: { const: 'status-url' },
            status: {
              type: 'object',
              additionalProperties: false,
              required: ['field', 'pending', 'done'],
              properties: {
                field: str('dot path of the status field'),
                pending: strings,
                done: strings,
                failed: strings,
              },
            },
            withoutStatusRef: {
              anyOf: [
                { enum: ['resend-same-key', 'cannot-tell'] },
                {
                  type: 'object',
                  additionalProperties: false,
                  required: ['path', 'match', 'statusUrlPath'],
                  properties: {
                    path: str('list path template', { pattern: '^/' }),
                    match: { $ref: '#/$defs/match' },
                    statusUrlPath: str('dot path of the status URL in the match'),
                  },
                },
              ],
            },
          },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['method', 'path', 'match'],
          properties: {
            method: { const: 'search' },
            path: str('search path template', { pattern: '^/' }),
            match: { $ref: '#/$defs/match' },
            refPath: str('dot path of the object id in the match'),
          },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['method'],
          properties: { method: { const: 'resend-same-key' } },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['method'],
          properties: { method: { const: 'none' } },
        },
      ],
    },
    httpPrecondition: {
      type: 'object',
      additionalProperties: false,
      required: ['param'],
      properties: {
        param: str('param holding the expected validator; one of the intent fields'),
        header: str('e.g. If-Match'),
        query: str('e.g. ifGenerationMatch'),
        failedStatus: { type: 'integer', minimum: 100 },
        validatorHeader: str('response header with the current validator, e.g. ETag'),
        validatorField: str('dot path of the validator in the resource body'),
      },
    },
    httpErrors: {
      type: 'object',
      additionalProperties: false,
      required: ['rules'],
      properties: {
        codePath: str('dot path of the error code in a JSON error body'),
        rules: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['status', 'outcome'],
            properties: {
              status: {
                anyOf: [
                  { type: 'integer', minimum: 100 },
                  { type: 'array', items: { type: 'integer', minimum: 100 } },
                  { enum: ['4xx', '5xx'] },
                ],
              },
              code: { anyOf: [{ type: 'string' }, strings] },
              outcome: { enum: ['rejected', 'not-applied', 'in-progress', 'unknown'] },
              reason: {
                enum: [
                  'validation',
                  'permission',
                  'authentication',
                  'configuration',
                  'conflict',
                  'not-found',
                  'card-declined',
                  'other',
                ],
              },
              cause: { enum: ['timeout', 'connection-reset', 'server-error', 'truncated-response', 'other'] },
            },
          },
        },
      },
    },
    httpDrill: {
      type: 'object',
      description: 'for `retrysafe drill --config`: which pattern sandbox this operation is drilled against',
      additionalProperties: false,
      properties: {
        pattern: { enum: [...HTTP_PATTERNS] },
        params: {
          type: 'object',
          description:
            'params of drill operation i; "{i}" in a string is replaced by i (default: the pattern reference params)',
        },
        changeIntent: str('intent field the drill changes to make a different operation'),
      },
    },
    card: {
      type: 'object',
      description:
        'a retry safety card (cardVersion 1); every fact is { value, source } and value may be "unknown". Checked in full by validateCard.',
      required: ['cardVersion', 'provider', 'operation'],
      properties: { cardVersion: { const: 1 }, provider: { type: 'string' }, operation: { type: 'string' } },
    },
  },
} as const satisfies SchemaNode;
