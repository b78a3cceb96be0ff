import type { PolicyOverrides } from '@retrysafe/core';

/** The account an adapter acts as (`AdapterV1.account`): set when one ledger serves more than one account of a provider. */
interface AccountConfig {
  readonly account?: string;
}
/** A first-party adapter's options: `K` names the environment variable holding its credential. */
type VendorConfig<K extends string> = AccountConfig & { readonly baseUrl?: string; readonly timeoutMs?: number } & {
  readonly [key in K]: string;
};
export interface SandboxConfig extends AccountConfig {
  readonly baseUrl: string;
  readonly timeoutMs?: number;
  readonly behaviour?: Record<string, unknown>;
}
/** Any other adapter: a module exporting a factory `(options) => AdapterV1`. */
export interface ModuleAdapterConfig {
  readonly type?: 'module';
  readonly module: string;
  readonly export?: string;
  readonly options?: Record<string, unknown>;
  /** Option ⇒ environment variable. A dotted option (`headers.Authorization`) sets the nested option. */
  readonly secretsFromEnv?: Record<string, string>;
}
/** An HTTP API declared as data (`@retrysafe/http`): operations, cards, body and path mapping, lookup. */
export interface HttpAdapterConfig extends AccountConfig {
  readonly type: 'http';
  /** Default: the adapter's name in the config. */
  readonly provider?: string;
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** Static headers that are not credentials. */
  readonly headers?: Record<string, string>;
  /** Header ⇒ environment variable holding its value (e.g. `Authorization: ACME_AUTH`). */
  readonly headersFromEnv?: Record<string, string>;
  readonly operations: Record<string, HttpOperationConfig>;
}

/** `@retrysafe/http`'s HttpOperationDeclaration (card inline or a path), loose so it needs no `@retrysafe/http`. */
export interface HttpOperationConfig {
  readonly description: string;
  readonly method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** `{param}`, `{key}`, `{businessOperationId}` placeholders. */
  readonly path: string;
  readonly key: {
    readonly travels: 'header' | 'body' | 'query' | 'none';
    readonly name?: string;
    readonly encoding?: 'raw' | 'sf-string';
    readonly rule?: { readonly maxLength?: number; readonly charset?: string; readonly prefix?: string };
  };
  /** The retry safety card inline, or a JSON/YAML file path relative to the config file. */
  readonly card: string | Readonly<Record<string, unknown>>;
  readonly lookup: {
    readonly method: 'get-by-key' | 'status-url' | 'search' | 'resend-same-key' | 'none';
    readonly [field: string]: unknown;
  };
  readonly precondition?: {
    readonly param: string;
    readonly header?: string;
    readonly query?: string;
    readonly failedStatus?: number;
    readonly validatorHeader?: string;
    readonly validatorField?: string;
  };
  readonly errors: {
    readonly codePath?: string;
    readonly rules: readonly {
      readonly status: number | readonly number[] | '4xx' | '5xx';
      readonly code?: string | readonly string[];
      readonly outcome: 'rejected' | 'not-applied' | 'in-progress' | 'unknown';
      readonly reason?: string;
      readonly cause?: string;
    }[];
  };
  readonly asyncReply?: boolean;
  /** JSON body template (`"{param}"` keeps the value's type). */
  readonly body?: unknown;
  readonly refPath?: string;
  readonly requestIdHeader?: string;
  readonly paramsSchema?: Readonly<Record<string, unknown>>;
  readonly sensitiveFields?: readonly string[];
  /** For `retrysafe drill --config`. */
  readonly drill?: {
    readonly pattern?: 'ietf-idempotency-key' | 'async-request-reply' | 'etag' | 'client-token';
    readonly params?: Readonly<Record<string, unknown>>;
    readonly changeIntent?: string;
  };
}

export type AdapterConfig =
  | VendorConfig<'apiKeyEnv'>
  | VendorConfig<'accessTokenEnv'>
  | VendorConfig<'tokenEnv'>
  | SandboxConfig
  | ModuleAdapterConfig
  | HttpAdapterConfig;

/** A DynamoDB ledger's table; credentials come from the environment or the AWS SDK's default chain. */
export interface DynamoDbLedgerConfig {
  readonly table: string;
  readonly region?: string;
  readonly endpoint?: string;
  /** How long a request may go unanswered before it fails (default 15 000): see createDynamoDbLedger. */
  readonly requestTimeoutMs?: number;
}

/** Where the ledger is: a SQLite file path, a `postgres://` URL, or a DynamoDB table. */
export type LedgerLocation = string | { readonly dynamodb: DynamoDbLedgerConfig };

export interface RetrysafeConfig {
  /** A SQLite file path (default `./retrysafe.db`), a `postgres://` URL or `{ dynamodb: { table } }`. */
  readonly ledger: LedgerLocation;
  /** JSONL file for handoff packets (optional; a relative path is read next to the config file, as the ledger's). */
  readonly handoffs?: string;
  readonly policy?: PolicyOverrides;
  readonly redact?: { readonly fields?: readonly string[] };
  readonly adapters: {
    readonly stripe?: VendorConfig<'apiKeyEnv'>;
    readonly msgraph?: VendorConfig<'accessTokenEnv'>;
    readonly hubspot?: VendorConfig<'accessTokenEnv'> & { readonly searchSettleMs?: number | null };
    readonly resend?: VendorConfig<'apiKeyEnv'>;
    readonly github?: VendorConfig<'tokenEnv'>;
    readonly slack?: VendorConfig<'tokenEnv'>;
    readonly sandbox?: SandboxConfig;
    readonly [name: string]: AdapterConfig | undefined;
  };
  /** Operations to expose (e.g. to an agent), as `<adapter>.<operation>`; default: all of every configured adapter. */
  readonly operations?: readonly string[];
  /** Directory the file was read from; relative paths resolve against it. */
  readonly baseDir: string;
}
