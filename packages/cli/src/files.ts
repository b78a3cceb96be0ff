import { extname } from 'node:path';
import { DataSyntaxError, FileLimitError, readDataFile as readLimited } from '@retrysafe/config';
import { parseCard, type RetrySafetyCard } from '@retrysafe/contract';
import { UsageError } from './errors.js';

/** JSON or YAML (by extension) within @retrysafe/config's file limits; UsageError when it cannot be read or parsed. */
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

/** A JSON or YAML file that must hold one object; `notObject` is the refusal when it does not. */
export function readObjectFile(path: string, notObject: string): Record<string, unknown> {
  const value = readDataFile(path);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(notObject);
  return value as Record<string, unknown>;
}

/** A card from a JSON or YAML file; CardValidationError lists every problem. */
export function readCardFile(path: string): RetrySafetyCard {
  return parseCard(readDataFile(path), path);
}
