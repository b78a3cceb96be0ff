// AI SDK 5: this package's tools, loaded with `ai` resolved to ai@5 (npm alias ai5).
import { describe, expect, it, vi } from 'vitest';
import { reissuedToolCall } from './ai-versions.js';

vi.mock('ai', async () => await import('ai5'));

describe('AI SDK 5', () => {
  it('the installed major is 5', async () => {
    const { createRequire } = await import('node:module');
    expect(createRequire(import.meta.url)('ai5/package.json').version).toMatch(/^5\./);
  });
  it('a re-issued tool call maps to the same business operation: one charge, the same result', async () => {
    await reissuedToolCall(await import('ai5'), (await import('ai5/test')) as never, 'v2', '5');
  });
});
