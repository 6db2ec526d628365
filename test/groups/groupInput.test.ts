/**
 * The bodies of a group's start and a group sandbox's start read (groupInput.ts): the API publishes
 * `database_access` and `attached_databases` as objects,
 * so null, a list or a string is a 400 that names the field, and nothing starts.
 * @backend any
 */
import { parseGroupStart, parseSandboxStart } from '../../src/api/groups/groupInput';
import { BadRequestError } from '../../src/common/errors';

describe('POST /sandbox/start body', () => {
  it('reads a body without attachments as none', () => {
    expect(parseSandboxStart({ id: 'a' }).attachments.size).toBe(0);
  });

  it('reads each attached database by its name', () => {
    const body = { id: 'a', attached_databases: { vector_db: { database_type: 'vector', access_type: 'read', namespaces: ['default'] } } };
    expect([...parseSandboxStart(body).attachments.keys()]).toEqual(['vector_db']);
  });

  it.each([null, [], 'vector_db', 1])('refuses attached_databases %j with a 400 naming it', (value) => {
    const call = (): unknown => parseSandboxStart({ id: 'a', attached_databases: value });
    expect(call).toThrow(BadRequestError);
    expect(call).toThrow(/attached_databases/);
  });
});

describe('POST /group/start body', () => {
  it('reads an empty body as a group without a database', () => {
    expect(parseGroupStart(undefined).database).toBeNull();
  });

  it.each([null, [], 'vector'])('refuses database_access %j with a 400 naming it', (value) => {
    const call = (): unknown => parseGroupStart({ database_access: value });
    expect(call).toThrow(BadRequestError);
    expect(call).toThrow(/database_access/);
  });
});
