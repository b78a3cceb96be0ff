import { FileLimitError } from '@retrysafe/config';
import { CardValidationError, validateCard } from '@retrysafe/contract';
import { UsageError } from '../../../errors.js';
import { readCardFile } from '../../../files.js';
import { refusals } from '../refusals.js';

/** `retrysafe cards validate <file…>`: each JSON/YAML card file read as the runner would, with what it will refuse. */
export function validateCardFiles(files: readonly string[]) {
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
          unreadable: true, // exit 2, as for any unreadable file
        };
      throw e;
    }
  });
}
