import Crypto
