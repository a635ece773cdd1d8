import { createHash, randomBytes } from 'node:crypto'
import { Secret, TOTP } from 'otpauth'
import type { Database, Executor } from '../../db/database.js'
import type { UserRow } from '../../db/schema.js'
import { conflict, mfaRequired, unauthenticated } from '../../platform/errors.js'
import type { SecretBox } from '../../platform/secret-box.js'
import type { TwoFactorRepository } from './two-factor-repository.js'

/** RFC 6238 as authenticator apps take it by default: SHA-1, 6 digits, 30-second steps. */
const TOTP_SETTINGS = { algorithm: 'SHA1', digits: 6, period: 30 } as const
/** One step either side of the current one: a phone's clock a little off still works. */
const DRIFT_STEPS = 1
/** 160 bits, RFC 4226's recommended length for the shared secret. */
const SECRET_BYTES = 20
const RECOVERY_CODES = 10
// Crockford's base32 alphabet: no i, l, o or u to misread. 32 letters, so a random
// byte's low five bits pick one uniformly; ten of them are 50 bits.
const RECOVERY_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const TOTP_CODE = /^\d{6}$/

const hashRecoveryCode = (code: string) =>
  createHash('sha256').update(code.replaceAll('-', '').toLowerCase()).digest('hex')

function newRecoveryCode(): string {
  const letters = [...randomBytes(10)].map((byte) => RECOVERY_ALPHABET[byte & 31]).join('')
  return `${letters.slice(0, 5)}-${letters.slice(5)}`
}

interface TwoFactorDependencies {
  db: Database
  repository: TwoFactorRepository
  /** Seals TOTP secrets at rest (secret-box.ts). */
  box: SecretBox
  /** The name an authenticator app shows beside the account. */
  issuer: string
}

export function createTwoFactorService({ db, repository, box, issuer }: TwoFactorDependencies) {
  const totpOf = (base32: string, email: string) =>
    new TOTP({ issuer, label: email, secret: Secret.fromBase32(base32), ...TOTP_SETTINGS })

  /** The time step `code` belongs to, within the drift allowed, or undefined for a wrong one. */
  function stepOf(sealedSecret: string | null, code: string): number | undefined {
    if (sealedSecret === null) return undefined
    const totp = new TOTP({ secret: Secret.fromBase32(box.open(sealedSecret)), ...TOTP_SETTINGS })
    const timestamp = Date.now()
    const delta = totp.validate({ token: code, timestamp, window: DRIFT_STEPS })
    return delta === null ? undefined : totp.counter({ timestamp }) + delta
  }

  async function stateOf(userId: number) {
    const state = await repository.stateOf(userId)
    if (!state) throw unauthenticated('The account of this token does not exist')
    return state
  }

  /**
   * Spends a current TOTP code or an unused recovery code of an account with two-factor
   * on, in one conditional write; false for a wrong code or one spent before.
   */
  async function spend(
    userId: number,
    sealedSecret: string | null,
    code: string,
    executor: Executor = db,
  ) {
    if (!TOTP_CODE.test(code)) {
      return repository.spendRecoveryCode(userId, hashRecoveryCode(code), executor)
    }
    const step = stepOf(sealedSecret, code)
    return step !== undefined && repository.spendStep(userId, step, executor)
  }

  return {
    /** A fresh secret, pending until `enable` proves an authenticator holds it. */
    async setup(userId: number) {
      const { email, enabled } = await stateOf(userId)
      if (enabled) throw alreadyEnabled()
      const secret = new Secret({ size: SECRET_BYTES }).base32
      if (!(await repository.savePendingSecret(userId, box.seal(secret)))) throw alreadyEnabled()
      return { secret, otpauthUrl: totpOf(secret, email).toString() }
    },

    /** Turns two-factor on with a current code of the pending secret; answers the recovery codes. */
    async enable(userId: number, code: string) {
      const { enabled, sealedSecret } = await stateOf(userId)
      if (enabled) throw alreadyEnabled()
      if (!sealedSecret)
        throw conflict('No two-factor setup is pending: POST /auth/2fa/setup first')
      const step = stepOf(sealedSecret, code)
      if (step === undefined) throw wrongCode()
      const recoveryCodes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode)
      const done = await db.transaction(async (tx) => {
        if (!(await repository.enable(userId, sealedSecret, step, tx))) return false
        await repository.replaceRecoveryCodes(userId, recoveryCodes.map(hashRecoveryCode), tx)
        return true
      })
      if (!done) throw wrongCode()
      return { recoveryCodes }
    },

    /** Turns two-factor off with a current code or an unused recovery code. */
    async disable(userId: number, code: string) {
      const { enabled, sealedSecret } = await stateOf(userId)
      if (!enabled) throw conflict('Two-factor authentication is not enabled')
      const done = await db.transaction(async (tx) => {
        if (!(await spend(userId, sealedSecret, code, tx))) return false
        await repository.disable(userId, tx)
        return true
      })
      if (!done) throw wrongCode()
    },

    /** A login's second step, once its password is right: throws unless `otp` is good. */
    async checkLogin(user: UserRow, otp: string | undefined) {
      if (!user.twoFactorEnabled) return
      if (otp === undefined) {
        throw mfaRequired(
          'This account has two-factor authentication: send otp, a current code or an unused recovery code',
        )
      }
      if (!(await spend(user.id, user.totpSecret, otp))) {
        throw mfaRequired('The otp is wrong, or was used before')
      }
    },
  }
}

const alreadyEnabled = () =>
  conflict('Two-factor authentication is enabled: disable it before setting it up again')
const wrongCode = () => mfaRequired('The code is wrong, or was used before')

export type TwoFactorService = ReturnType<typeof createTwoFactorService>
