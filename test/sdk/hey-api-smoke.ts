// A second generator must produce a client that compiles: this file uses it.
import { createProduct, listProducts } from './generated/hey-api/index.js'

export const calls = [listProducts, createProduct]
