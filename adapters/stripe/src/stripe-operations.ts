import type { BusinessOperationId, JsonSchema, LookupContext, RetrySafetyCard } from '@retrysafe/contract';
import type { SchemaType } from '@retrysafe/contract/provider';
import type Stripe from 'stripe';
import { STRIPE_KEY_RULE, STRIPE_OPERATION_METADATA_KEY, stripeCards } from './stripe-cards.js';

/** A Stripe object as the SDK returns it (with its non-enumerable `lastResponse`). */
export type StripeObject = { id?: string; metadata?: Record<string, string> | null; created?: number } & Record<
  string,
  unknown
>;

/** How `doLookup` finds an object past the key's retention: the delayed Search API, or a list filtered by a parent. */
interface PastRetentionLookup {
  readonly kind: 'search' | 'list';
  find(client: Stripe, ctx: Pick<LookupContext, 'params' | 'businessOperationId'>): Promise<StripeObject[]>;
}

export type StripeOperation = Omit<ReturnType<typeof stripeOperation>, '~params'>;

// The one definition of each operation's params: the runner checks it before the claim (nothing claimed,
// nothing sent) and the frame on every attempt.
const S_STRING = { type: 'string', minLength: 1, maxLength: 500 } as const;
// Stripe takes 50 keys in all: the adapter adds two (the ref and retrysafe_operation_id) and owns their names.
const S_METADATA = (refKey: string) => ({
  type: 'object',
  maxProperties: 48,
  propertyNames: { maxLength: 40, not: { enum: [STRIPE_OPERATION_METADATA_KEY, refKey] } },
  additionalProperties: { type: 'string', maxLength: 500 },
  description: `extra metadata (at most 48 keys of ≤ 40 characters); ${refKey} and ${STRIPE_OPERATION_METADATA_KEY} are added by the adapter`,
});
// No white space: Stripe's ids carry none (https://docs.stripe.com/changelog/2018-05-21/valid-characters-ids-coupons-skus-customers-products-plans),
// and `cus_1 ` beside `cus_1` would be two operations for what Stripe may read as one customer.
const S_ID = (prefix: string) => ({ type: 'string', pattern: `^${prefix}\\S+$`, maxLength: 255 }) as const;
const S_POS_INT = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

const metadataQuery = (id: BusinessOperationId) =>
  `metadata['${STRIPE_OPERATION_METADATA_KEY}']:'${id.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

type Resource = 'customers' | 'paymentIntents' | 'invoices';

// Stripe's string match is word-based and case insensitive (`order-1` also finds `Order-1-b`): only the exact id is ours.
// Every page is read (a page not read may hold an exact match, or a second one), up to a bound that throws: cannot tell.
const SEARCH_PAGES = 10;
const searchIn = (resource: Resource): PastRetentionLookup => ({
  kind: 'search',
  async find(client, { businessOperationId: id }) {
    // Keyed by id: an object on two pages (the results moved between the reads) is one object, not a duplicate.
    const ours = new Map<unknown, StripeObject>();
    const query = { query: metadataQuery(id), limit: 100 };
    let page = await client[resource].search(query);
    for (let n = 1; ; n++) {
      for (const o of page.data as unknown as StripeObject[])
        if (o.metadata?.[STRIPE_OPERATION_METADATA_KEY] === id) ours.set(o.id, o);
      if (!page.has_more) return [...ours.values()];
      if (n === SEARCH_PAGES || !page.next_page)
        throw new Error(`more than ${n * 100} objects match the id loosely: the search cannot tell`);
      page = await client[resource].search({ ...query, page: page.next_page });
    }
  },
});

/** One create from its data: params go to Stripe snake_cased, the caller's `…Ref` to metadata beside the id. */
function stripeOperation<const R extends Record<string, JsonSchema>, const O extends Record<string, JsonSchema>>(spec: {
  description: string;
  sensitiveFields?: readonly string[];
  required: R;
  optional: O;
  resource: Resource | 'refunds';
  pastRetention?: PastRetentionLookup;
}) {
  const name = `${spec.resource}.create` as const;
  const card = stripeCards[name];
  const names = Object.keys({ ...spec.required, ...spec.optional });
  const ref = names.find((n) => n.endsWith('Ref'))!;
  const operation = {
    name,
    // The object type it creates (payment_intent): a rejection whose body carries one says it was created.
    object: snake(spec.resource).slice(0, -1),
    description: spec.description,
    card: card as RetrySafetyCard,
    keyRule: STRIPE_KEY_RULE,
    sensitiveFields: spec.sensitiveFields ?? [],
    paramsSchema: {
      type: 'object',
      additionalProperties: false,
      required: Object.keys(spec.required),
      properties: { ...spec.required, ...spec.optional, metadata: S_METADATA(snake(ref)) },
    } as JsonSchema,
    toStripe(p: Record<string, unknown>, id: BusinessOperationId) {
      const out: Record<string, unknown> = {};
      for (const name of names) if (name !== ref && p[name] !== undefined) out[snake(name)] = p[name];
      const own = (p.metadata as Record<string, string> | undefined) ?? {};
      out.metadata = { ...own, [snake(ref)]: String(p[ref]), [STRIPE_OPERATION_METADATA_KEY]: id };
      return out;
    },
    create: (client: Stripe, params: Record<string, unknown>, options: Stripe.RequestOptions) =>
      (client[spec.resource].create as (...a: unknown[]) => Promise<unknown>)(params, options) as Promise<StripeObject>,
    pastRetention: spec.pastRetention ?? searchIn(spec.resource as Resource),
  };
  return operation as typeof operation & {
    /** Type only: the params these schemas describe, plus your own metadata (the adapter adds retrysafe_operation_id). */
    readonly '~params'?: { readonly [K in keyof R]: SchemaType<R[K]> } & {
      readonly [K in keyof O]?: SchemaType<O[K]>;
    } & { readonly metadata?: Readonly<Record<string, string>> };
  };
}

const ref = (description: string) => ({ ...S_STRING, description });
const S_CURRENCY = { type: 'string', pattern: '^[a-z]{3}$' } as const;

const OPERATIONS = {
  'customers.create': stripeOperation({
    resource: 'customers',
    description: 'Create a Stripe customer (POST /v1/customers) once per customerRef.',
    sensitiveFields: ['email', 'name', 'phone'],
    required: { customerRef: ref('your own id for this customer; names the intent') },
    optional: {
      email: { type: 'string', format: 'email', minLength: 1, maxLength: 500 },
      name: S_STRING,
      phone: S_STRING,
      description: S_STRING,
    },
  }),
  'paymentIntents.create': stripeOperation({
    resource: 'paymentIntents',
    description:
      'Create (and optionally confirm) a PaymentIntent (POST /v1/payment_intents) once per customer and orderRef; the same order with another amount or currency is a conflict, not a second charge.',
    sensitiveFields: ['paymentMethod'],
    required: {
      customer: S_ID('cus_'),
      amount: { ...S_POS_INT, description: 'smallest currency unit' },
      currency: S_CURRENCY,
      orderRef: ref('your order reference; names the intent'),
    },
    optional: {
      description: S_STRING,
      paymentMethod: S_ID('pm_'),
      paymentMethodTypes: { type: 'array', minItems: 1, items: { type: 'string' } },
      confirm: { type: 'boolean' },
      captureMethod: { enum: ['automatic', 'manual'] },
    },
  }),
  'invoices.create': stripeOperation({
    resource: 'invoices',
    description: 'Create a draft invoice for a customer (POST /v1/invoices) once per customer and invoiceRef.',
    required: { customer: S_ID('cus_'), invoiceRef: ref('your invoice reference; names the intent') },
    optional: {
      description: S_STRING,
      collectionMethod: { enum: ['charge_automatically', 'send_invoice'] },
      daysUntilDue: S_POS_INT,
      autoAdvance: { type: 'boolean' },
      currency: S_CURRENCY,
    },
  }),
  'refunds.create': stripeOperation({
    resource: 'refunds',
    description: 'Refund a PaymentIntent (POST /v1/refunds) once per paymentIntent and refundRef.',
    required: { paymentIntent: S_ID('pi_'), refundRef: ref('your refund reference; names the intent') },
    optional: {
      amount: { ...S_POS_INT, description: 'omit for the whole remaining amount' },
      reason: { enum: ['duplicate', 'fraudulent', 'requested_by_customer'] },
    },
    pastRetention: {
      kind: 'list',
      async find(client, { params, businessOperationId: id }) {
        const found: StripeObject[] = [];
        // Refunds have no Search API; the list filtered by payment_intent is not delayed.
        const paymentIntent = String((params as { paymentIntent?: unknown } | null)?.paymentIntent);
        // A failed page throws: it may hold a second refund of ours, so a match on an earlier page proves nothing.
        for await (const refund of client.refunds.list({ payment_intent: paymentIntent, limit: 100 })) {
          if (refund.metadata?.[STRIPE_OPERATION_METADATA_KEY] === id) found.push(refund as unknown as StripeObject);
        }
        return found;
      },
    },
  }),
};

export const stripeOperations: Readonly<Record<string, StripeOperation>> = Object.freeze(OPERATIONS);

type Params<N extends keyof typeof OPERATIONS> = NonNullable<(typeof OPERATIONS)[N]['~params']>;
export type CustomersCreateParams = Params<'customers.create'>;
export type PaymentIntentsCreateParams = Params<'paymentIntents.create'>;
export type InvoicesCreateParams = Params<'invoices.create'>;
export type RefundsCreateParams = Params<'refunds.create'>;

/** Each Stripe operation's params and the Stripe object a `done` result holds (as JSON). */
export type StripeOperationTypes = {
  readonly 'customers.create': { readonly params: CustomersCreateParams; readonly result: Stripe.Customer };
  readonly 'paymentIntents.create': {
    readonly params: PaymentIntentsCreateParams;
    readonly result: Stripe.PaymentIntent;
  };
  readonly 'invoices.create': { readonly params: InvoicesCreateParams; readonly result: Stripe.Invoice };
  readonly 'refunds.create': { readonly params: RefundsCreateParams; readonly result: Stripe.Refund };
};
