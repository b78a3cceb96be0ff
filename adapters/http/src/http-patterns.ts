import type { JsonSchema } from '@retrysafe/contract';
import { documentsUpdateCard, exportsCreateCard, instancesRunCard, ordersCreateCard } from './http-cards.js';
import { matcher } from './http-declaration.js';
import type { HttpOperationSpec } from './http-operations.js';

// One ready-made declaration per pattern, matching the loopback sandboxes: what the drill runs, and examples to copy.

const P = 'https://retrysafe.invalid/problems/';
const STRING = { type: 'string' } as const;

/** A params schema that requires every property it lists. */
const allRequired = (properties: Record<string, JsonSchema>): JsonSchema => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});

/** IETF Idempotency-Key (draft-ietf-httpapi-idempotency-key-header-06), `POST /orders`. */
export function ietfOrdersCreate(provider: string): HttpOperationSpec {
  return {
    description: 'Create an order (IETF Idempotency-Key)',
    method: 'POST',
    path: '/orders',
    key: { travels: 'header', name: 'Idempotency-Key', encoding: 'sf-string', rule: { maxLength: 64, prefix: 'rs-' } },
    card: ordersCreateCard(provider),
    // The business-operation id travels in the order so a search finds it after the key expired.
    body: (p, ids) => ({ customer: p.customer, sku: p.sku, quantity: p.quantity, reference: ids.businessOperationId }),
    lookup: {
      method: 'search',
      path: '/orders?reference={businessOperationId}',
      match: matcher({ items: 'data', where: { reference: '{businessOperationId}' } }),
    },
    errors: {
      codePath: 'type',
      rules: [
        {
          status: 400,
          code: [`${P}idempotency-key-missing`, `${P}idempotency-key-malformed`],
          outcome: 'rejected',
          reason: 'configuration',
        },
        { status: 400, outcome: 'rejected', reason: 'validation' },
        { status: 409, code: `${P}request-in-flight`, outcome: 'in-progress' },
        { status: 409, code: `${P}out-of-stock`, outcome: 'rejected', reason: 'other' },
        { status: 422, code: `${P}idempotency-key-reused`, outcome: 'rejected', reason: 'conflict' },
        // Rate limited before processing; and any re-send carries the same key, which folds it anyway.
        { status: 429, outcome: 'not-applied' },
      ],
    },
    refPath: 'id',
    requestIdHeader: 'x-request-id',
    paramsSchema: allRequired({
      customer: STRING,
      sku: STRING,
      quantity: { type: 'integer', minimum: 1 },
      orderRef: STRING,
    }),
  };
}

/** Asynchronous request-reply (Azure Architecture Center), `POST /exports`. */
export function asyncExportsCreate(provider: string): HttpOperationSpec {
  return {
    description: 'Start an export job (202 + Location + Retry-After, Idempotency-Key)',
    method: 'POST',
    path: '/exports',
    key: {
      travels: 'header',
      name: 'Idempotency-Key',
      rule: { maxLength: 64, charset: 'A-Za-z0-9._:-', prefix: 'rs-' },
    },
    card: exportsCreateCard(provider),
    asyncReply: true,
    // The business-operation id travels as clientRequestId so a lost 202 can be found without the key.
    body: (p, ids) => ({ dataset: p.dataset, format: p.format, clientRequestId: ids.businessOperationId }),
    lookup: {
      method: 'status-url',
      status: { field: 'status', pending: ['running', 'queued'], done: ['succeeded'], failed: ['failed', 'cancelled'] },
      withoutStatusRef: {
        path: '/exports?clientRequestId={businessOperationId}',
        match: matcher({ items: 'data', where: { clientRequestId: '{businessOperationId}' } }),
        statusUrlPath: 'statusUrl',
      },
    },
    errors: {
      codePath: 'error.code',
      rules: [
        { status: 400, code: 'IdempotencyKeyMissing', outcome: 'rejected', reason: 'configuration' },
        { status: 400, outcome: 'rejected', reason: 'validation' },
        { status: 422, code: 'IdempotencyKeyReused', outcome: 'rejected', reason: 'conflict' },
        { status: 422, code: 'ExportFailed', outcome: 'rejected', reason: 'other' },
        { status: 429, outcome: 'not-applied' },
      ],
    },
    refPath: 'id',
    requestIdHeader: 'x-ms-request-id',
    paramsSchema: allRequired({ dataset: STRING, format: { enum: ['csv', 'json'] }, requestRef: STRING }),
  };
}

/** Conditional idempotency (ETag / If-Match, GCS-style preconditions), `PUT /documents/{id}`. */
export function etagDocumentsUpdate(provider: string): HttpOperationSpec {
  return {
    description: 'Replace a document’s title and body if it still has the given ETag',
    method: 'PUT',
    path: '/documents/{id}',
    key: { travels: 'none' },
    card: documentsUpdateCard(provider),
    precondition: { param: 'etag', header: 'If-Match', failedStatus: 412, validatorHeader: 'ETag' },
    lookup: {
      method: 'get-by-key',
      path: '/documents/{id}',
      applied: (doc, ctx) => {
        const d = doc as { title?: unknown; body?: unknown };
        return d.title === ctx.params.title && d.body === ctx.params.body;
      },
    },
    errors: {
      codePath: 'error.code',
      rules: [
        { status: 400, outcome: 'rejected', reason: 'validation' },
        { status: 404, outcome: 'rejected', reason: 'not-found' },
        { status: 428, outcome: 'rejected', reason: 'configuration' },
        // A re-send carries the same If-Match: even if a 429 had been processed, the duplicate gets 412 and a lookup.
        { status: 429, outcome: 'not-applied' },
        { status: 408, outcome: 'unknown', cause: 'timeout' },
      ],
    },
    refPath: 'id',
    requestIdHeader: 'x-guploader-uploadid',
    paramsSchema: allRequired({ id: STRING, etag: STRING, title: STRING, body: STRING }),
  };
}

/** AWS-style client token (EC2 RunInstances ClientToken), `POST /instances`. */
export function clientTokenInstancesRun(provider: string): HttpOperationSpec {
  return {
    description: 'Launch an instance (ClientToken in the body)',
    method: 'POST',
    path: '/instances',
    key: { travels: 'body', name: 'ClientToken', rule: { maxLength: 64, prefix: 'rs-' } },
    card: instancesRunCard(provider),
    body: (p) => ({ ImageId: p.imageId, InstanceType: p.instanceType }),
    lookup: {
      method: 'search',
      path: '/instances?clientToken={key}',
      match: matcher({ items: 'Instances', where: { ClientToken: '{key}' } }),
      refPath: 'InstanceId',
    },
    errors: {
      codePath: '__type',
      rules: [
        { status: 400, code: 'IdempotentParameterMismatch', outcome: 'rejected', reason: 'conflict' },
        { status: 400, outcome: 'rejected', reason: 'validation' },
        { status: 503, code: 'RequestLimitExceeded', outcome: 'not-applied' },
      ],
    },
    refPath: 'Instances.0.InstanceId',
    requestIdHeader: 'x-amzn-requestid',
    paramsSchema: allRequired({ imageId: STRING, instanceType: STRING, launchRef: STRING }),
  };
}
