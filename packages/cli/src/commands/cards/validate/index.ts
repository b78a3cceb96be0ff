import { FileLimitError } from '@retrysafe/config';
import { type CardProblem, CardValidationError, validateCard } from '@retrysafe/contract';
import { UsageError } from '../../../errors.js';
import { readCardFile } from '../../../files.js';
import { refusals } from '../refusals.js';

export interface CardFileResult {
  readonly file: string;
  readonly ok: boolean;
  readonly operation?: string;
  readonly problems: readonly CardProblem[];
  readonly unknowns: readonly string[];
  readonly refusals: readonly string[];
  /** Set when the file could not be read at all (exit 2, as for any unreadable file). */
  readonly unreadable?: true;
}

/** `retrysafe cards validate <file…>`: each JSON/YAML card file read as the runner would, with what it will refuse. */
export function validateCardFiles(files: readonly string[]): CardFileResult[] {
  return files.map((file) => {
    try {
      const card = readCardFile(file);
      return {
        file,
        ok: true,
        operation: card.operation,
        problems: [],
        unknowns: validateCard(card).unknowns,
        refusals: refusals(card),
      };
    } catch (e) {
      if (CardValidationError.isInstance(e))
        return { file, ok: false, problems: e.problems, unknowns: [], refusals: [] };
      if (e instanceof UsageError || FileLimitError.isInstance(e))
        return {
          file,
          ok: false,
          problems: [{ path: '(file)', message: (e as Error).message }],
          unknowns: [],
          refusals: [],
          unreadable: true,
        };
      throw e;
    }
  });
}
