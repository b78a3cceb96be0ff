import { writeFileSync } from 'node:fs';
import { readDataFile } from '@retrysafe/config';
import { namingPath } from '@retrysafe/core/internal';
import { UsageError } from './errors.js';

/** A JSON or YAML file that must hold one object; `notObject` is the refusal when it does not. */
export function readObjectFile(path: string, notObject: string): Record<string, unknown> {
  const value = readDataFile(path);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(notObject);
  return value as Record<string, unknown>;
}

/** Every file the CLI writes: a failed write names its file, as a failed open does (a full disk's error has no path). */
export function writeText(path: string, text: string): void {
  try {
    writeFileSync(path, text);
  } catch (e) {
    throw namingPath(e, path);
  }
}
