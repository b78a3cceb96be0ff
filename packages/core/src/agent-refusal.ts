/**
 * The one mapping from a typed refusal before the claim (nothing claimed, nothing sent) to the
 * structured answer an agent gets, used by callAgentTool and so by @retrysafe/mcp, its fence and
 * @retrysafe/ai-sdk. Exhaustive: a refusal added to REFUSALS without its answer does not compile.
 */
import {
  ConflictError,
  type FieldError,
  InvalidIdError,
  InvalidIntentError,
  InvalidParamsError,
  PayloadLimitError,
} from '@retrysafe/contract';
import { AdapterContractError } from './errors/adapter-contract-error.js';

/** Every refusal an agent's arguments can meet before the claim, by kind. */
const REFUSALS = {
  'payload-limit': PayloadLimitError,
  'invalid-params': InvalidParamsError,
  'invalid-intent': InvalidIntentError,
  'invalid-id': InvalidIdError,
  conflict: ConflictError,
  'adapter-contract': AdapterContractError,
} as const;

type RefusalKind = keyof typeof REFUSALS;

export type PreClaimRefusal = {
  [K in RefusalKind]: { readonly kind: K; readonly error: InstanceType<(typeof REFUSALS)[K]> };
}[RefusalKind];

export type RefusalAnswer =
  | {
      readonly status: 'conflict';
      readonly businessOperationId: string;
      readonly field: string;
      readonly paths: readonly string[];
      readonly message: string;
    }
  /** `businessOperationId`: the id these arguments would have (null when the intent fields themselves cannot give one). */
  | {
      readonly status: 'invalid-input';
      readonly businessOperationId: string | null;
      readonly fields: readonly FieldError[];
      readonly message: string;
    };

/** The refusal `err` is, or null when it is none of them (then it is not the agent's to answer). */
export function preClaimRefusal(err: unknown): PreClaimRefusal | null {
  for (const kind of Object.keys(REFUSALS) as RefusalKind[]) {
    if (REFUSALS[kind].isInstance(err)) return { kind, error: err } as PreClaimRefusal;
  }
  return null;
}

function unreachable(r: never): never {
  throw new Error(`no answer for the refusal ${JSON.stringify(r)}`);
}

/** The structured answer to a refusal; `businessOperationId` is the id the arguments would have, if known. */
export function refusalAnswer(r: PreClaimRefusal, businessOperationId: string | null): RefusalAnswer {
  const invalid = (fields: readonly FieldError[], message: string): RefusalAnswer => ({
    status: 'invalid-input',
    businessOperationId,
    fields,
    message,
  });
  switch (r.kind) {
    case 'payload-limit':
      return invalid(
        [
          {
            path: `(${r.error.part})`,
            message:
              r.error.limit === 'depth'
                ? `nests deeper than ${r.error.max} levels`
                : `is larger than ${r.error.max} bytes`,
          },
        ],
        `${r.error.message}. Send smaller, flatter arguments.`,
      );
    case 'invalid-params':
      return invalid(r.error.fields, `${r.error.message}. Correct the named fields and call again.`);
    case 'invalid-intent':
      return invalid([{ path: r.error.path || '(root)', message: 'cannot be part of an intent' }], r.error.message);
    case 'invalid-id':
      return invalid([], r.error.message);
    case 'conflict':
      return {
        status: 'conflict',
        businessOperationId: r.error.businessOperationId,
        field: r.error.field,
        paths: r.error.paths,
        message: `${r.error.message}. If you meant a different operation, change an intent field; otherwise call again with the original arguments.`,
      };
    case 'adapter-contract':
      return invalid(
        [],
        `${r.error.message}. The tool cannot take these arguments as it is set up; a person must fix the adapter.`,
      );
    default:
      return unreachable(r);
  }
}
