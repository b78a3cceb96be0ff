import { extname } from 'node:path';
import { DataSyntaxError, FileLimitError, readDataFile as readLimited } from '@retrysafe/config';
import { parseCard, type RetrySafetyCard } from '@retrysafe/contract';
import { UsageError } from './errors.js';

/**
 * Parses a JSON or YAML file (by extension; `.yaml`/`.yml` are YAML, everything else JSON) into plain
 * data, within the file limits of @retrysafe/config (size, YAML aliases, nesting): FileLimitError over
 * one, UsageError when it cannot be read or parsed.
 */
export function readDataFile(path: string): unknown {
  try {
    return readLimited(path);
  } catch (e) {
    if (FileLimitError.isInstance(e)) throw e;
    if (e instanceof DataSyntaxError)
      throw new UsageError(
        `${path}: not valid ${['.yaml', '.yml'].includes(extname(path).toLowerCase()) ? 'YAML' : 'JSON'}: ${e.message.split('\n')[0]}`,
      );
    throw new UsageError(`${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
}

/**
 * A retry safety card from a JSON or YAML file (the format the published schema describes:
 * `@retrysafe/contract/schema/retry-safety-card.v1.schema.json`). Throws CardValidationError listing
 * every problem, FileLimitError over a file limit, or a UsageError when the file cannot be read or parsed.
 */
export function readCardFile(path: string): RetrySafetyCard {
  return parseCard(readDataFile(path), path);
}
