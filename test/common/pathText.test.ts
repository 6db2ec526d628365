/**
 * The path rule every route applies (common/pathText.ts), counted as Linux counts it (bytes: a name
 * of 128 two-byte characters is past NAME_MAX), the safety net that answers a file system's refusal
 * the checks missed as the client's 4xx (common/fileSystemErrors.ts), and a lifecycle create's
 * image.uri, which must be a reference before the engine's client puts it into a URL.
 * @backend any
 */
import { promises as fs } from 'node:fs';
import { BrokerError } from '../../src/common/errors';
import { checkPathText, NAME_MAX_BYTES, PATH_MAX_BYTES, pathTextFault } from '../../src/common/pathText';
import { fileSystemRefusal } from '../../src/common/fileSystemErrors';
import { createParser } from '../../src/api/lifecycle/lifecycleInput';
import { compileCheck } from '../../src/http/schemaCheck';
import { pathSchema } from '../../src/api/contractParts';

describe('a path a file system takes', () => {
  it.each([
    ['a name of 255 bytes', 'n'.repeat(NAME_MAX_BYTES)],
    ['a path of 4095 bytes', `/${'d/'.repeat(2046)}xx`],
    ['dots, spaces and unicode', '../a b/é/😀/.'],
    ['the empty path', ''],
  ])('takes %s', (_what, text) => {
    expect(pathTextFault(text)).toBeNull();
  });

  it.each([
    ['a name of 256 bytes', 'n'.repeat(NAME_MAX_BYTES + 1), /^has a name "n{24}\.\.\." \(256 bytes\) longer than a name may be \(255 bytes\)$/],
    ['a name of 128 two-byte characters (256 bytes)', `d/${'é'.repeat(128)}`, /\(256 bytes\) longer than a name/],
    ['a path of 4096 bytes', `/${'d/'.repeat(2047)}x`, /^is 4096 bytes, longer than a path may be \(4095 bytes\)$/],
    ['a NUL byte', 'a\u0000b', /^must not contain NUL bytes$/],
  ])('refuses %s, saying why', (_what, text, why) => {
    expect(pathTextFault(text)).toMatch(why);
    expect(() => checkPathText(text, "'cwd'")).toThrow(expect.objectContaining({ kind: 'invalid', message: expect.stringMatching(/^'cwd' /) }));
  });

  it('is what a contract declares with x-path: the input check refuses in the same words', () => {
    const check = compileCheck(pathSchema());
    expect(check('notes/a.txt')).toBe('notes/a.txt');
    expect(() => check('x'.repeat(300))).toThrow(/^'' has a name "x{24}\.\.\." \(300 bytes\)/);
    expect(() => check(1)).toThrow("must be a string (a path), got a number");
  });

  it('matches what the kernel refuses: a name past NAME_MAX is ENAMETOOLONG', async () => {
    await expect(fs.stat(`/tmp/${'n'.repeat(NAME_MAX_BYTES + 1)}`)).rejects.toMatchObject({ code: 'ENAMETOOLONG' });
    await expect(fs.stat(`/tmp/${'n'.repeat(NAME_MAX_BYTES)}`)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.stat(`/${'d/'.repeat(PATH_MAX_BYTES)}`)).rejects.toMatchObject({ code: 'ENAMETOOLONG' });
  });
});

describe("a file system's refusal no check caught", () => {
  const errnoOf = async (op: () => Promise<unknown>): Promise<unknown> => op().then(() => null, (err: unknown) => err);

  it.each([
    ['ENAMETOOLONG', () => fs.stat(`/tmp/${'n'.repeat(300)}`), 400, 'bad_request'],
    ['ENOENT', () => fs.stat('/tmp/no/such/file/here'), 404, 'file_not_found'],
    ['ENOTDIR', () => fs.stat('/etc/hostname/x'), 400, 'bad_request'],
    ['EISDIR', () => fs.readFile('/tmp'), 400, 'not_a_file'],
    ["Node's NUL refusal", () => fs.stat('/tmp/a\u0000b'), 400, 'bad_request'],
  ])('%s becomes the 4xx it means', async (_code, op, status, code) => {
    const refusal = fileSystemRefusal(await errnoOf(op));
    expect(refusal).toBeInstanceOf(BrokerError);
    expect([{ invalid: 400, not_found: 404 }[refusal!.kind as 'invalid'], refusal!.code]).toEqual([status, code]);
    // never the host's path
    expect(refusal!.message).not.toContain('/tmp');
  });

  it('leaves every other error a 500', () => {
    expect(fileSystemRefusal(new Error('boom'))).toBeNull();
    expect(fileSystemRefusal(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBeNull();
    expect(fileSystemRefusal(Object.assign(new TypeError('bad'), { code: 'ERR_INVALID_ARG_VALUE' }))).toBeNull();
    expect(fileSystemRefusal('ENOENT')).toBeNull();
  });
});

describe("a lifecycle create's image.uri", () => {
  const parse = createParser({ minSeconds: 60, maxSeconds: 3600 });
  const create = (uri: string) => parse({ image: { uri }, entrypoint: ['tail', '-f', '/dev/null'] });

  it.each(['bash-broker-test:latest', 'x', 'registry.local:5000/team/img:v1.2', 'localhost/a__b-c.d', `ubuntu@sha256:${'a'.repeat(64)}`])('takes %s', (uri) => {
    expect(create(uri).image).toBe(uri);
  });

  it.each([
    ['..', '..'],
    ['../x', '../x'],
    ['a/../../b', 'a/../../b'],
    ['/tmp/x', '/tmp/x'],
    ['a NUL byte', 'a\u0000b'],
    ['a query', 'a?b=1'],
    ['upper case', 'Upper:1'],
    ['a name of 256 characters', 'n'.repeat(256)],
    ['a tag of 129 characters', `a:${'t'.repeat(129)}`],
  ])('refuses %s (the engine client would put it in a URL as it is)', (_what, uri) => {
    expect(() => create(uri)).toThrow(/^'image\.uri' must (be an image reference|name a repository)/);
  });
});
