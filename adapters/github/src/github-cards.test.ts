// The cards against what GitHub's REST documentation states, and the SDK fact the retry layer rests on
// (the installed @octokit/rest carries no retry or throttling plugin).
import { Octokit } from '@octokit/rest';
import { validateCard } from '@retrysafe/contract';
import { expect, it } from 'vitest';
import { gitHubCards } from './github-cards.js';
import { gitHubOperations } from './github-operations.js';

// validateCard's problems include every unknown fact missing from unverified[].
it.each(Object.entries(gitHubCards))(
  '%s: valid and its operation\'s; no key, nothing stored, duplicates; a list lookup whose "not found" proves nothing; every fact cites docs.github.com or the SDK',
  (name, card) => {
    expect(validateCard(card).problems).toEqual([]);
    expect(card.operation).toBe(`github.${name}`);
    expect(gitHubOperations[name]?.card).toBe(card);
    expect(Object.isFrozen(card)).toBe(true);
    expect(card.providerKey.travels.value).toBe('none');
    expect(card.storedResult.semantics.value).toBe('none');
    expect(card.concurrency.value).toBe('duplicates');
    expect(card.lookup.consistencyDelay.value).toBe('unknown');
    expect(card.lookup.lateApplyBound?.value).toBe('unknown');
    expect(card.reconciler).not.toMatch(/search\/issues/);
    const sources = JSON.stringify(card).match(/"source":"[^"]*"/g) ?? [];
    for (const s of sources) expect(s).toMatch(/docs\.github\.com|@octokit/);
  },
);

it('@octokit/rest is built from core + request-log + paginate + endpoint methods only: no plugin resends', () => {
  const names = ((Octokit as unknown as { plugins: { name: string }[] }).plugins ?? []).map((p) => p.name);
  expect(names.length).toBeGreaterThan(0);
  expect(names).not.toContain('retry');
  expect(names).not.toContain('throttling');
});
