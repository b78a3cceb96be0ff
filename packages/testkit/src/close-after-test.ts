import { onTestFinished } from 'vitest';

/** Closed when the calling test (or its beforeEach) finishes, the last opened first. */
export function closeAfterTest<T extends { close(): Promise<unknown> }>(thing: T): T {
  onTestFinished(async () => {
    await thing.close();
  });
  return thing;
}
