import { count } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emails } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'
import { smtpSink } from './helpers/smtp-sink.js'

let sequence = 0
const address = (name: string) => `${name}-${++sequence}-${Date.now()}@example.com`

describe.each(backends)('emails on $name', (backend) => {
  let smtp: Awaited<ReturnType<typeof smtpSink>>
  let server: TestServer
  let second: TestServer
  let admin: string
  const api = () => server.api
  const environment = () => ({
    SMTP_URL: smtp.url,
    EMAIL_FROM: 'shop@example.com',
    EMAIL_POLL_INTERVAL_MS: '50',
    EMAIL_RETRY_BASE_MS: '50',
    EMAIL_MAX_ATTEMPTS: '3',
  })
  const send = (body: object, token = admin, through = server) =>
    through.api.post('/emails/send', { json: body, token })
  const queued = async (to: string, through = server) => {
    const response = await send(
      { to, subject: `Hello ${to}`, text: 'Your order is on its way.' },
      admin,
      through,
    )
    expect(response.status, response.text).toBe(202)
    return response.body.data as { id: number }
  }
  /** The email once it has left `queued`/`sending` for good. */
  const settled = async (id: number) => {
    let email: { status: string } & Record<string, unknown> = { status: 'queued' }
    await expect
      .poll(
        async () => {
          email = (await api().get(`/emails/${id}`, { token: admin })).body.data
          return email.status
        },
        { timeout: 15_000, interval: 25 },
      )
      .toMatch(/^(sent|failed)$/)
    return email
  }
  const storedEmails = async () =>
    (await server.testDatabase.database.db.select({ n: count() }).from(emails))[0]?.n

  beforeAll(async () => {
    smtp = await smtpSink()
    server = await startServer(backend, environment())
    second = await startServer(backend, environment(), { testDatabase: server.testDatabase })
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(async () => {
    await second?.close()
    await server?.close()
    await smtp?.close()
  })

  it('queues an email (202, Location) and delivers it through SMTP', async () => {
    const to = address('buyer')
    const response = await send({ to, subject: 'Your order', text: 'It ships today.' })
    expect(response.status).toBe(202)
    const { id, status } = response.body.data
    expect(status).toBe('queued')
    expect(response.headers.get('location')).toBe(`/emails/${id}`)
    const email = await settled(id)
    expect(email).toMatchObject({
      id,
      to,
      subject: 'Your order',
      status: 'sent',
      attempts: 1,
      lastError: null,
      nextAttemptAt: null,
    })
    expect(Date.parse(email.sentAt as string)).toBeGreaterThan(0)
    const [mail, ...more] = smtp.deliveredTo(to)
    expect(more).toEqual([])
    expect(mail?.raw).toContain('Subject: Your order')
    expect(mail?.raw).toContain('From: shop@example.com')
    expect(mail?.raw).toContain(`To: ${to}`)
    expect(mail?.raw).toContain('It ships today.')
    expect(mail?.raw).toMatch(new RegExp(`Message-ID: <email-${id}\\.\\d+@example\\.com>`))
  })

  it('retries a delivery the server refused for now, and records why', async () => {
    const to = address('busy')
    smtp.refuse(to, 451, 1)
    const { id } = await queued(to)
    const email = await settled(id)
    expect(email).toMatchObject({ status: 'sent', attempts: 2 })
    expect(email.lastError).toMatch(/451/)
    expect(smtp.deliveredTo(to)).toHaveLength(1)
  })

  it('gives up at once on a permanent refusal (5xx)', async () => {
    const to = address('unknown')
    smtp.refuse(to, 550)
    const { id } = await queued(to)
    const email = await settled(id)
    expect(email).toMatchObject({ status: 'failed', attempts: 1, nextAttemptAt: null })
    expect(email.lastError).toMatch(/550/)
    // Later polls leave it alone.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await api().get(`/emails/${id}`, { token: admin })).body.data.attempts).toBe(1)
    expect(smtp.deliveredTo(to)).toEqual([])
  })

  it('fails an email after EMAIL_MAX_ATTEMPTS refusals for now', async () => {
    const to = address('full')
    smtp.refuse(to, 452)
    const { id } = await queued(to)
    const email = await settled(id)
    expect(email).toMatchObject({ status: 'failed', attempts: 3 })
    expect(email.lastError).toMatch(/452/)
  })

  it('never sends one email twice from two instances sharing the queue', async () => {
    const recipients = Array.from({ length: 30 }, (_, index) => address(`many${index}`))
    const ids = await Promise.all(
      recipients.map((to, index) => queued(to, index % 2 === 0 ? server : second)),
    )
    // And a backlog both instances find due at once, claiming in batches side by side.
    const backlog = Array.from({ length: 150 }, (_, index) => address(`backlog${index}`))
    const inserted = await server.testDatabase.database.db
      .insert(emails)
      .values(backlog.map((to) => ({ recipient: to, subject: 'Backlog', text: 'Queued together' })))
      .returning({ id: emails.id })
    for (const { id } of [...ids, ...inserted]) expect((await settled(id)).status).toBe('sent')
    for (const to of [...recipients, ...backlog]) expect(smtp.deliveredTo(to), to).toHaveLength(1)
  })

  describe('refusals, with nothing queued', () => {
    it.each([
      [{ to: 'not-an-address', subject: 's', text: 't' }, 'to'],
      [{ to: 'a@b@example.com', subject: 's', text: 't' }, 'to'],
      [{ to: `${'x'.repeat(250)}@example.com`, subject: 's', text: 't' }, 'to'],
      [{ to: 'ok@example.com', subject: 'Hi\r\nBcc: victim@example.com', text: 't' }, 'subject'],
      [{ to: 'ok@example.com', subject: '', text: 't' }, 'subject'],
      [{ to: 'ok@example.com', subject: 's', text: '' }, 'text'],
      [{ to: 'ok@example.com', subject: 's' }, 'text'],
      [{ to: 'ok@example.com', subject: 's', text: 't', bcc: 'x@example.com' }, 'bcc'],
    ])('refuses %o with 400 naming %s', async (body, field) => {
      const before = await storedEmails()
      const response = await send(body)
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details).join()).toContain(field)
      expect(await storedEmails()).toBe(before)
    })

    it('is for admins: 401 without a token, 403 for a user, both queuing nothing', async () => {
      // Signed up first: a sign-up queues its verification email.
      const user = await newUser(server.api)
      const before = await storedEmails()
      const body = { to: address('x'), subject: 's', text: 't' }
      expect((await api().post('/emails/send', { json: body })).status).toBe(401)
      expect((await send(body, user.accessToken)).status).toBe(403)
      expect((await api().get('/emails/1', { token: user.accessToken })).status).toBe(403)
      expect(await storedEmails()).toBe(before)
    })

    it('answers 404 for an email that does not exist', async () => {
      const response = await api().get('/emails/2147483647', { token: admin })
      expect(response.status).toBe(404)
    })
  })
})

describe.each(backends)('emails without SMTP_URL on $name', (backend) => {
  const logLines: string[] = []
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(
      backend,
      { EMAIL_POLL_INTERVAL_MS: '50' },
      { logger: { level: 'info', stream: { write: (line: string) => logLines.push(line) } } },
    )
  })
  afterAll(() => server?.close())

  it('"sends" each email as one line of the log, without its text', async () => {
    const admin = (await login(server.api, ADMIN)).accessToken
    const to = address('logged')
    const response = await server.api.post('/emails/send', {
      json: { to, subject: 'Logged', text: 'a secret body' },
      token: admin,
    })
    const { id } = response.body.data
    await expect
      .poll(async () => (await server.api.get(`/emails/${id}`, { token: admin })).body.data.status)
      .toBe('sent')
    const lines = logLines.map((line) => JSON.parse(line)).filter((line) => line.emailId === id)
    expect(lines).toEqual([expect.objectContaining({ msg: 'email sent', to, subject: 'Logged' })])
    expect(logLines.join('\n')).not.toContain('a secret body')
  })
})
