/**
 * Image references: Docker's grammar, one canonical form, and refusals that say why (core/images/imageRef.ts).
 * @backend any
 */
import { MAX_IMAGE_REF_CHARS, parseImageRef } from '../../src/core/images/imageRef';
import { BadRequestError } from '../../src/common/errors';

const DIGEST = `sha256:${'ab'.repeat(32)}`;

describe('image references', () => {
  it.each([
    ['ubuntu', 'docker.io/library/ubuntu:latest', 'docker.io/library/ubuntu'],
    ['ubuntu:22.04', 'docker.io/library/ubuntu:22.04', 'docker.io/library/ubuntu'],
    ['index.docker.io/library/ubuntu:22.04', 'docker.io/library/ubuntu:22.04', 'docker.io/library/ubuntu'],
    ['swe/task-17', 'docker.io/swe/task-17:latest', 'docker.io/swe/task-17'],
    ['127.0.0.1:5000/tasks/t1:v1', '127.0.0.1:5000/tasks/t1:v1', '127.0.0.1:5000/tasks/t1'],
    ['localhost/x', 'localhost/x:latest', 'localhost/x'],
    ['registry.local/a/b/c__d.e-f:T_1.x', 'registry.local/a/b/c__d.e-f:T_1.x', 'registry.local/a/b/c__d.e-f'],
    [`gcr.io/p/img@${DIGEST}`, `gcr.io/p/img@${DIGEST}`, 'gcr.io/p/img'],
    [`img:v1@${DIGEST}`, `docker.io/library/img@${DIGEST}`, 'docker.io/library/img'],
  ])('%s is %s', (raw, canonical, repository) => {
    const ref = parseImageRef(raw);
    expect(ref.canonical).toBe(canonical);
    expect(ref.repository).toBe(repository);
  });

  it.each([
    ['', 'empty'],
    ['UPPER', 'upper case in the path'],
    ['a//b', 'an empty part'],
    ['a:b:c', 'two tags'],
    ['$(id)', 'a shell substitution'],
    ['a b', 'a space'],
    ['a\nb', 'a newline'],
    ['../etc/passwd', 'a parent directory'],
    ['/abs', 'a leading slash'],
    ['a@sha256:12', 'a short digest'],
    ['a@md5:' + 'a'.repeat(32), 'another digest algorithm'],
    ['a:' + 't'.repeat(129), 'a tag of 129 characters'],
    ['reg.io/' + 'a'.repeat(260), 'a repository over 255 characters'],
    ['a'.repeat(MAX_IMAGE_REF_CHARS + 1), 'over the length limit'],
  ])('refuses %j (%s) with a 400', (raw) => {
    expect(() => parseImageRef(raw)).toThrow(BadRequestError);
  });

  it('refuses hostile strings at the length limit quickly (no catastrophic backtracking)', () => {
    for (const unit of ['a', 'a-', 'a.', 'a_', 'aA-', 'a.a-']) {
      const raw = unit.repeat(Math.floor((MAX_IMAGE_REF_CHARS - 1) / unit.length)) + '!';
      expect(() => parseImageRef(raw)).toThrow(BadRequestError);
    }
  });
});
