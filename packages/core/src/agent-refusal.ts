/**
 * The one mapping from a typed refusal before the claim (nothing claimed, nothing sent) to the
 * structured answer an agent gets, used by callAgentTool and so by @retrysafe/mcp, its fence and
 * @retrysafe/ai-sdk.
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

/**
 * The answer to `err` when it is a refusal an agent's arguments can meet before the claim, else null
 * (then it is not the agent's to answer). `idOf` gives the id the arguments would have, if known.
 */
export function refusalAnswer(err: unknown, idOf: () => string | null): RefusalAnswer | null {
  if (ConflictError.isInstance(err))
    return {
      status: 'conflict',
      businessOperationId: err.businessOperationId,
      field: err.field,
      paths: err.paths,
      message: `${err.message}. If you meant a different operation, change an intent field; otherwise call again with the original arguments.`,
    };
  const invalid = (fields: readonly FieldError[], message: string, id = idOf()): RefusalAnswer => ({
    status: 'invalid-input',
    businessOperationId: id,
    fields,
    message,
  });
  if (PayloadLimitError.isInstance(err)) {
    const what = err.limit === 'depth' ? `nests deeper than ${err.max} levels` : `is larger than ${err.max} bytes`;
    return invalid([{ path: `(${err.part})`, message: what }], `${err.message}. Send smaller, flatter arguments.`);
  }
  if (InvalidParamsError.isInstance(err))
    return invalid(err.fields, `${err.message}. Correct the named fields and call again.`);
  if (InvalidIntentError.isInstance(err))
    return invalid([{ path: err.path || '(root)', message: 'cannot be part of an intent' }], err.message, null);
  if (InvalidIdError.isInstance(err)) return invalid([], err.message);
  if (AdapterContractError.isInstance(err))
    return invalid(
      [],
      `${err.message}. The tool cannot take these arguments as it is set up; a person must fix the adapter.`,
    );
  return null;
}
