"""Elementwise ops of the Wgpu backend as WGSL expressions over ``v0, v1, v2`` in the stored type.

Each table maps an op to a function ``(t) -> expr`` of the compute type ``t`` ('f32', 'i32', 'u32');
:func:`unary`/:func:`binary` wrap the expression with the output dtype's fix-up (rounding to float16,
wrapping int8...). Ops whose integer forms must raise on data (integer division by zero) or that need
more precision than a short formula gives (lgamma, digamma, erfinv...) are not here: the backend runs
them on the host (see ``ember.wgpu.host_ops()``).
"""

from __future__ import annotations

from ... import _dtype as D
from . import dtypes as T  # noqa: F811
from .handle import WH, contiguous_strides  # noqa: F401
from .kernels import Scalar, ew

NAN = "bitcast<f32>(0x7fc00000u)"
INF = "bitcast<f32>(0x7f800000u)"

HELPERS = f"""
fn _isnan(x: f32) -> bool {{ return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }}
fn _isinf(x: f32) -> bool {{ return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }}
fn _b(c: bool) -> u32 {{ return select(0u, 1u, c); }}
fn _expm1(x: f32) -> f32 {{
  if (abs(x) < 1e-5) {{ return x + 0.5 * x * x; }}
  let u = exp(x);
  if (u == 1.0) {{ return x; }}
  let um = u - 1.0;
  if (um == -1.0) {{ return -1.0; }}
  if (_isinf(u)) {{ return u; }}
  return um * x / log(u);
}}
fn _log1p(x: f32) -> f32 {{
  if (x < -1.0) {{ return {NAN}; }}
  let u = 1.0 + x;
  if (u == 1.0) {{ return x; }}
  if (_isinf(u)) {{ return u; }}
  return log(u) * x / (u - 1.0);
}}
fn _sigmoid(x: f32) -> f32 {{
  let e = exp(-abs(x));
  return select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0);
}}
fn _tanh(x: f32) -> f32 {{
  if (abs(x) < 0.55) {{ let e = _expm1(2.0 * x); return e / (e + 2.0); }}
  let e = exp(-2.0 * abs(x));
  return sign(x) * (1.0 - e) / (1.0 + e);
}}
fn _erf(x: f32) -> f32 {{
  let a = abs(x);
  if (a < 0.5) {{
    let z = x * x;
    return x * (1.1283791670955126 + z * (-0.37612638903183754 + z * (0.11283791670955126 + z * (-0.026866170645131252
      + z * (0.005223977625442188 + z * -0.0008548327023450852)))));
  }}
  // erfc(a) = exp(-a^2) * P(t) (Numerical Recipes' Chebyshev fit, relative error < 1.2e-7)
  let t = 1.0 / (1.0 + 0.5 * a);
  let y = t * exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return sign(x) * (1.0 - y);
}}
fn _pow(a: f32, b: f32) -> f32 {{
  if (b == 0.0) {{ return 1.0; }}
  if (a == 1.0) {{ return 1.0; }}
  if (_isnan(a) || _isnan(b)) {{ return {NAN}; }}
  if (abs(a) == 1.0 && _isinf(b)) {{ return 1.0; }}
  if (b == 1.0) {{ return a; }}
  if (b == 2.0) {{ return a * a; }}
  if (b == 0.5) {{ return sqrt(a); }}
  if (a == 0.0) {{
    let odd = fract(b * 0.5) != 0.0 && trunc(b) == b;
    if (b > 0.0) {{ return select(0.0, a, odd); }}
    return select({INF}, select({INF}, -{INF}, bitcast<u32>(a) != 0u), odd);
  }}
  let m = pow(abs(a), b);
  if (a > 0.0) {{ return m; }}
  if (trunc(b) != b) {{
    if (_isinf(b)) {{ return select(m, select(0.0, {INF}, b > 0.0) , abs(a) != 1.0); }}
    return {NAN};
  }}
  return select(m, -m, fract(b * 0.5) != 0.0);
}}
fn _fmod(a: f32, b: f32) -> f32 {{
  if (b == 0.0 || _isinf(a)) {{ return {NAN}; }}
  if (_isinf(b)) {{ return a; }}
  var r = a - b * trunc(a / b);
  if (abs(r) >= abs(b)) {{ r = r - b * trunc(r / b); }}
  // Vulkan drivers may divide a few ulps off (3.0 / 3.0 < 1 on NVIDIA's): one more |b| either way
  let step = select(abs(b), -abs(b), a < 0.0);
  if (abs(r) >= abs(b)) {{ r = r - step; }}
  if (r != 0.0 && ((r < 0.0) != (a < 0.0))) {{ r = r + step; }}
  if (r == 0.0) {{ return _copysign(0.0, a); }}
  return r;
}}
fn _rem(a: f32, b: f32) -> f32 {{
  let m = _fmod(a, b);
  if (m != 0.0 && ((m < 0.0) != (b < 0.0))) {{ return m + b; }}
  return m;
}}
fn _floordiv(a: f32, b: f32) -> f32 {{
  if (b == 0.0) {{ return a / b; }}
  let m = _fmod(a, b);
  var d = (a - m) / b;
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) {{ d = d - 1.0; }}
  if (d == 0.0) {{ return select(0.0, -0.0, (a < 0.0) != (b < 0.0)); }}
  var f = floor(d);
  if (d - f > 0.5) {{ f = f + 1.0; }}
  return f;
}}
fn _max(a: f32, b: f32) -> f32 {{ if (_isnan(a) || _isnan(b)) {{ return {NAN}; }} return max(a, b); }}
fn _min(a: f32, b: f32) -> f32 {{ if (_isnan(a) || _isnan(b)) {{ return {NAN}; }} return min(a, b); }}
fn _fmax(a: f32, b: f32) -> f32 {{ if (_isnan(a)) {{ return b; }} if (_isnan(b)) {{ return a; }} return max(a, b); }}
fn _fmin(a: f32, b: f32) -> f32 {{ if (_isnan(a)) {{ return b; }} if (_isnan(b)) {{ return a; }} return min(a, b); }}
fn _copysign(a: f32, b: f32) -> f32 {{
  return bitcast<f32>((bitcast<u32>(a) & 0x7fffffffu) | (bitcast<u32>(b) & 0x80000000u));
}}
fn _hypot(a: f32, b: f32) -> f32 {{
  if (_isinf(a) || _isinf(b)) {{ return {INF}; }}
  let m = max(abs(a), abs(b));
  if (m == 0.0) {{ return 0.0; }}
  let x = a / m; let y = b / m;
  return m * sqrt(x * x + y * y);
}}
// atan, asin, acos, atan2 after Cephes' single-precision versions: drivers' builtins are allowed
// errors of thousands of ulps (lavapipe's are ~1e-4 relative)
fn _atan(x0: f32) -> f32 {{
  if (_isnan(x0)) {{ return x0; }}
  var x = abs(x0);
  var y = 0.0;
  if (x > 2.414213562373095) {{ y = 1.5707963267948966; x = -1.0 / x; }}
  else if (x > 0.4142135623730950) {{ y = 0.7853981633974483; x = (x - 1.0) / (x + 1.0); }}
  let z = x * x;
  y = y + ((((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * x + x);
  return select(y, -y, x0 < 0.0);
}}
fn _asin(x0: f32) -> f32 {{
  let a = abs(x0);
  if (a > 1.0 || _isnan(x0)) {{ return {NAN}; }}
  var x = a; var z = 0.0; var big = false;
  if (a > 0.5) {{ z = 0.5 * (1.0 - a); x = sqrt(z); big = true; }} else {{ z = a * a; }}
  var r = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z
           + 1.6666752422e-1) * z * x + x;
  if (big) {{ r = 1.5707963267948966 - (r + r); }}
  return select(r, -r, x0 < 0.0);
}}
fn _acos(x: f32) -> f32 {{
  if (abs(x) > 1.0 || _isnan(x)) {{ return {NAN}; }}
  if (x > 0.5) {{ return 2.0 * _asin(sqrt(0.5 * (1.0 - x))); }}
  if (x < -0.5) {{ return 3.141592653589793 - 2.0 * _asin(sqrt(0.5 * (1.0 + x))); }}
  return 1.5707963267948966 - _asin(x);
}}
fn _atan2(y: f32, x: f32) -> f32 {{
  if (_isnan(x) || _isnan(y)) {{ return {NAN}; }}
  let xneg = (bitcast<u32>(x) >> 31u) != 0u;
  if (y == 0.0 && x == 0.0) {{ return _copysign(select(0.0, 3.141592653589793, xneg), y); }}
  if (_isinf(x) && _isinf(y)) {{ return _copysign(select(0.7853981633974483, 2.356194490192345, xneg), y); }}
  if (_isinf(x)) {{ return _copysign(select(0.0, 3.141592653589793, xneg), y); }}
  if (_isinf(y) || x == 0.0) {{ return _copysign(1.5707963267948966, y); }}
  let a = _atan(y / x);
  if (!xneg) {{ return a; }}
  return a + _copysign(3.141592653589793, y);
}}
fn _sign(x: f32) -> f32 {{ if (x > 0.0) {{ return 1.0; }} if (x < 0.0) {{ return -1.0; }} return 0.0 * x; }}
fn _round(x: f32) -> f32 {{ return round(x); }}
fn _asinh(x: f32) -> f32 {{
  let a = abs(x);
  if (a < 1e-3) {{ return x - x * x * x / 6.0; }}
  if (a > 1e18) {{ return sign(x) * (log(a) + 0.6931471805599453); }}
  return sign(x) * log(a + sqrt(a * a + 1.0));
}}
fn _acosh(x: f32) -> f32 {{
  if (x < 1.0) {{ return {NAN}; }}
  if (x > 1e7) {{ return log(x) + 0.6931471805599453; }}
  return log(x + sqrt(x * x - 1.0));
}}
fn _atanh(x: f32) -> f32 {{
  if (abs(x) < 1e-3) {{ return x + x * x * x / 3.0; }}
  return 0.5 * (_log1p(x) - _log1p(-x));
}}
fn _sinh(x: f32) -> f32 {{
  if (abs(x) < 1.0) {{ let e = _expm1(x); return 0.5 * (e + e / (e + 1.0)); }}
  if (abs(x) > 88.0) {{ let h = exp(abs(x) * 0.5); return sign(x) * 0.5 * h * h; }}
  return sinh(x);
}}
fn _cosh(x: f32) -> f32 {{ if (abs(x) > 88.0) {{ let h = exp(abs(x) * 0.5); return 0.5 * h * h; }} return cosh(x); }}
// sin/cos/tan of large arguments: Payne-Hanek reduction with exact u32 arithmetic (drivers' range
// reduction is short: lavapipe's sin(2**31) is off in the first digit). |x| = m * 2**e, m < 2**24;
// x * 2/pi is formed from 96 bits of 2/pi around the binary point, giving the quadrant and 64 bits
// of the fraction.
fn _m32(a: u32, b: u32) -> vec2<u32> {{
  let a0 = a & 0xFFFFu; let a1 = a >> 16u; let b0 = b & 0xFFFFu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xFFFFu) + (p10 & 0xFFFFu);
  return vec2<u32>((p00 & 0xFFFFu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}}
fn _pio2w(k: i32) -> u32 {{
  var t = array<u32, 8>(0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u, 0x3C439041u,
                        0xFE5163ABu, 0xDEBBC561u);
  return t[k];
}}
fn _chunk(w: array<u32, 4>, p: i32) -> u32 {{
  if (p < 0) {{ return w[0] << u32(-p); }}
  let i = p / 32; let r = u32(p % 32);
  var v = w[i] >> r;
  if (r != 0u && i < 3) {{ v = v | (w[i + 1] << (32u - r)); }}
  return v;
}}
// (r, q): |x| = (q + r / (pi/2)) * pi/2 with r in [-pi/4, pi/4]
fn _reduce(a: f32) -> vec2<f32> {{
  if (a < 4096.0) {{
    let q = round(a * 0.6366197723675814);
    // Cody-Waite with pi/2 in three parts: exact while q < 2**12
    let r = ((a - q * 1.5703125) - q * 4.837512969970703e-4) - q * 7.549789948768648e-8;
    return vec2<f32>(r, q);
  }}
  let b = bitcast<u32>(a);
  let m = (b & 0x7FFFFFu) | 0x800000u;
  let e = i32((b >> 23u) & 0xFFu) - 150;
  var k0 = 0;
  loop {{ if (e - 32 * (k0 + 1) < 2) {{ break; }} k0 = k0 + 1; }}
  let p2 = _m32(m, _pio2w(k0 + 2)); let p1 = _m32(m, _pio2w(k0 + 1)); let p0 = _m32(m, _pio2w(k0));
  let w1 = p2.y + p1.x; let c1 = select(0u, 1u, w1 < p2.y);
  let w2a = p1.y + c1; let w2 = w2a + p0.x; let c2 = select(0u, 1u, w2 < w2a);
  let w = array<u32, 4>(p2.x, w1, w2, p0.y + c2);
  let bp = 64 - (e - 32 * (k0 + 1));      // the binary point: bit index in w
  var q = _chunk(w, bp) & 3u;
  var hi = _chunk(w, bp - 32);
  var lo = _chunk(w, bp - 64);
  var sgn = 1.0;
  if ((hi >> 31u) != 0u) {{  // fraction >= 1/2: take 1 - fraction and the next quadrant
    q = (q + 1u) & 3u;
    lo = ~lo + 1u;
    hi = ~hi + select(0u, 1u, lo == 0u);
    sgn = -1.0;
  }}
  let f = f32(hi) * 2.3283064365386963e-10 + f32(lo) * 5.421010862427522e-20;
  return vec2<f32>(sgn * f * 1.5707963267948966, f32(q));
}}
fn _sin(x: f32) -> f32 {{
  if (_isnan(x) || _isinf(x)) {{ return {NAN}; }}
  let rq = _reduce(abs(x));
  let q = u32(rq.y) & 3u;
  var v = select(sin(rq.x), cos(rq.x), (q & 1u) == 1u);
  if (q >= 2u) {{ v = -v; }}
  return select(v, -v, x < 0.0);
}}
fn _cos(x: f32) -> f32 {{
  if (_isnan(x) || _isinf(x)) {{ return {NAN}; }}
  let rq = _reduce(abs(x));
  let q = u32(rq.y) & 3u;
  var v = select(cos(rq.x), -sin(rq.x), (q & 1u) == 1u);
  if (q == 2u || q == 3u) {{ v = -v; }}
  return v;
}}
fn _tan(x: f32) -> f32 {{
  if (_isnan(x) || _isinf(x)) {{ return {NAN}; }}
  let rq = _reduce(abs(x));
  let t = tan(rq.x);
  let v = select(t, -1.0 / t, (u32(rq.y) & 1u) == 1u);
  return select(v, -v, x < 0.0);
}}
fn _ipow(a: i32, b: i32) -> i32 {{
  if (b < 0) {{ if (a == 1) {{ return 1; }} if (a == -1) {{ return select(1, -1, (b & 1) != 0); }} return 0; }}
  var r = 1; var base = a; var e = b;
  loop {{ if (e == 0) {{ break; }} if ((e & 1) != 0) {{ r = r * base; }} base = base * base; e = e >> 1u; }}
  return r;
}}
fn _upow(a: u32, b: u32) -> u32 {{
  var r = 1u; var base = a; var e = b;
  loop {{ if (e == 0u) {{ break; }} if ((e & 1u) != 0u) {{ r = r * base; }} base = base * base; e = e >> 1u; }}
  return r;
}}
"""

# unary: (x, t) -> expr in the compute type; None for t means "floats only"
_F_UNARY = {
    "exp": "exp(v0)", "exp2": "exp2(v0)", "expm1": "_expm1(v0)", "log": "log(v0)", "log1p": "_log1p(v0)",
    "log2": "log2(v0)", "log10": "(log2(v0) * 0.30102999566398120)", "sqrt": "sqrt(v0)", "rsqrt": "(1.0 / sqrt(v0))",
    "reciprocal": "(1.0 / v0)", "sin": "_sin(v0)", "cos": "_cos(v0)", "tan": "_tan(v0)", "asin": "_asin(v0)",
    "acos": "_acos(v0)", "atan": "_atan(v0)", "sinh": "_sinh(v0)", "cosh": "_cosh(v0)", "tanh": "_tanh(v0)",
    "asinh": "_asinh(v0)", "acosh": "_acosh(v0)", "atanh": "_atanh(v0)", "erf": "_erf(v0)",
    "sigmoid": "_sigmoid(v0)", "floor": "floor(v0)", "ceil": "ceil(v0)", "trunc": "trunc(v0)", "round": "_round(v0)",
    "neg": "(-v0)", "abs": "abs(v0)", "sign": "_sign(v0)", "square": "(v0 * v0)",
}
_I_UNARY = {"neg": "(-v0)", "abs": "abs(v0)", "square": "(v0 * v0)", "floor": "v0", "ceil": "v0", "trunc": "v0",
            "round": "v0", "sign": "clamp(v0, -1, 1)", "bitwise_not": "(~v0)"}
_U_UNARY = {"abs": "v0", "square": "(v0 * v0)", "floor": "v0", "ceil": "v0", "trunc": "v0", "round": "v0",
            "sign": "min(v0, 1u)", "neg": "(0u - v0)", "bitwise_not": "(~v0)"}
_PRED = {  # -> bool
    "isnan": {"f32": "_b(_isnan(v0))", "i32": "0u", "u32": "0u"},
    "isinf": {"f32": "_b(_isinf(v0))", "i32": "0u", "u32": "0u"},
    "isfinite": {"f32": "_b(!(_isnan(v0) || _isinf(v0)))", "i32": "1u", "u32": "1u"},
    "logical_not": {t: f"_b(v0 == {T.zero(t)})" for t in ("f32", "i32", "u32")},
    "signbit": {"f32": "(bitcast<u32>(v0) >> 31u)", "i32": "_b(v0 < 0)", "u32": "0u"},
}

_F_BINARY = {
    "add": "(v0 + v1)", "sub": "(v0 - v1)", "mul": "(v0 * v1)", "div": "(v0 / v1)", "pow": "_pow(v0, v1)",
    "maximum": "_max(v0, v1)", "minimum": "_min(v0, v1)", "fmax": "_fmax(v0, v1)", "fmin": "_fmin(v0, v1)",
    "atan2": "_atan2(v0, v1)", "hypot": "_hypot(v0, v1)", "copysign": "_copysign(v0, v1)",
    "remainder": "_rem(v0, v1)", "fmod": "_fmod(v0, v1)", "floor_divide": "_floordiv(v0, v1)",
}
_I_BINARY = {
    "add": "(v0 + v1)", "sub": "(v0 - v1)", "mul": "(v0 * v1)", "maximum": "max(v0, v1)", "minimum": "min(v0, v1)",
    "fmax": "max(v0, v1)", "fmin": "min(v0, v1)", "bitwise_and": "(v0 & v1)", "bitwise_or": "(v0 | v1)",
    "bitwise_xor": "(v0 ^ v1)",
}
_SHIFT = {"i32": {"bitwise_left_shift": "select(0i, v0 << u32(v1), v1 >= 0 && v1 < 32)",
                  "bitwise_right_shift": "select(v0 >> 31u, v0 >> u32(v1), v1 >= 0 && v1 < 32)"},
          "u32": {"bitwise_left_shift": "select(0u, v0 << v1, v1 < 32u)",
                  "bitwise_right_shift": "select(0u, v0 >> v1, v1 < 32u)"}}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_LOGIC = {"logical_and": "&&", "logical_or": "||", "logical_xor": "!="}

UNARY_OPS = set(_F_UNARY) | set(_I_UNARY) | set(_PRED)
BINARY_OPS = set(_F_BINARY) | set(_I_BINARY) | set(_CMP) | set(_LOGIC) | {"bitwise_left_shift", "bitwise_right_shift"}


def _new(rt, shape, dtype) -> WH:
    from .handle import WH as _WH
    return _WH(rt.alloc(max(1, _numel(shape))), shape, contiguous_strides(shape), 0, dtype)


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def unary_expr(op: str, dtype):
    """(expr, out dtype) of a unary op on ``dtype``, or None when it runs elsewhere."""
    t = T.st(dtype)
    if op in _PRED:
        return _PRED[op][t], D.bool
    if dtype is D.bool:
        if op in ("abs", "square", "floor", "ceil", "trunc", "round", "sign"):
            return "v0", D.bool
        if op == "bitwise_not":
            return "(1u - v0)", D.bool
        return None
    table = {"f32": _F_UNARY, "i32": _I_UNARY, "u32": _U_UNARY}[t]
    e = table.get(op)
    return None if e is None else (e, dtype)


def binary_expr(op: str, dtype, int_ok: bool = True):
    """(expr, out dtype) of a binary op on operands of ``dtype``, or None."""
    t = T.st(dtype)
    # naga emits ordered float comparisons, so NaN != x would be false: spell "not equal" as !(==)
    if op == "ne":
        return "_b(!(v0 == v1))", D.bool
    if op in _CMP:
        return f"_b(v0 {_CMP[op]} v1)", D.bool
    if op in _LOGIC:
        z = T.zero(t)
        return f"_b((!(v0 == {z})) {_LOGIC[op]} (!(v1 == {z})))", D.bool
    if t == "f32":
        e = _F_BINARY.get(op)
    elif dtype is D.bool:
        e = {"bitwise_and": "(v0 & v1)", "bitwise_or": "(v0 | v1)", "bitwise_xor": "(v0 ^ v1)",
             "maximum": "max(v0, v1)", "minimum": "min(v0, v1)", "mul": "(v0 & v1)", "add": "(v0 | v1)"}.get(op)
    else:
        e = _I_BINARY.get(op) or _SHIFT[t].get(op)
        if op == "pow":
            e = "_ipow(v0, v1)" if t == "i32" else "_upow(v0, v1)"
    return None if e is None else (e, dtype)


def _scalar_for(x, dtype):
    t = T.st(dtype)
    if t != "f32":
        if isinstance(x, float):
            return None  # a float scalar with an integer tensor: the frontend promotes; be safe
        return Scalar(int(x), t)
    return Scalar(float(x), t)


def run_unary(be, op, x: WH):
    r = unary_expr(op, x.dtype)
    if r is None:
        return None
    expr, odt = r
    out = _new(be.rt, x.shape, odt)
    return ew(be.rt, T.fix(odt, expr), [x], out, HELPERS)


def run_binary(be, op, x, y):
    h = x if isinstance(x, WH) else y
    dtype = h.dtype
    if isinstance(x, WH) and isinstance(y, WH) and x.dtype is not y.dtype:
        return None
    if op == "pow" and isinstance(y, WH) and T.st(dtype) != "f32" and dtype is not D.bool:
        return None  # integer pow with tensor exponents: negative exponents need PyTorch's rules (host)
    r = binary_expr(op, dtype)
    if r is None:
        return None
    expr, odt = r
    ops = []
    for v in (x, y):
        if isinstance(v, WH):
            ops.append(v)
        else:
            s = _scalar_for(v, dtype)
            if s is None:
                return None
            ops.append(s)
    shape = _bshape(*(v.shape for v in (x, y) if isinstance(v, WH)))
    out = _new(be.rt, shape, odt)
    return ew(be.rt, T.fix(odt, expr), ops, out, HELPERS)


def _bshape(*shapes):
    nd = max(len(s) for s in shapes)
    out = []
    for d in range(nd):
        n = 1
        for s in shapes:
            k = d - (nd - len(s))
            if k >= 0 and s[k] != 1:
                n = s[k]
        out.append(n)
    return tuple(out)


def run_cast(be, x: WH, dtype):
    out = _new(be.rt, x.shape, dtype)
    return ew(be.rt, T.convert("v0", x.dtype, dtype), [x], out, HELPERS)


def run_where(be, cond, x, y):
    hs = [v for v in (x, y) if isinstance(v, WH)]
    dtype = hs[0].dtype if hs else None
    if dtype is None or any(h.dtype is not dtype for h in hs) or not isinstance(cond, WH):
        return None
    ops = [cond] + [v if isinstance(v, WH) else _scalar_for(v, dtype) for v in (x, y)]
    if any(o is None for o in ops):
        return None
    shape = _bshape(cond.shape, *(h.shape for h in hs))
    out = _new(be.rt, shape, dtype)
    return ew(be.rt, "select(v2, v1, v0 != 0u)", ops, out, HELPERS)


def run_clamp(be, x: WH, lo, hi):
    t = T.st(x.dtype)
    if x.dtype is D.bool:
        return None
    ops, expr = [x], "v0"
    for bound, fn in ((lo, "max"), (hi, "min")):
        if bound is None:
            continue
        if isinstance(bound, WH):
            if bound.dtype is not x.dtype:
                return None
            ops.append(bound)
        else:
            if t != "f32" and isinstance(bound, float):
                if bound != bound:
                    return None
                # an integer x against a float bound: max(x, lo) == max(x, ceil(lo)), min(x, hi) == min(x, floor(hi))
                import math as _m
                bound = max(-2**31, min(2**31 - 1, _m.ceil(bound) if fn == "max" else _m.floor(bound))) \
                    if abs(bound) != float("inf") else (-2**31 if bound < 0 else 2**31 - 1)
            s = _scalar_for(bound, x.dtype)
            if s is None:
                return None
            ops.append(s)
        k = len(ops) - 1
        expr = f"_{fn}({expr}, v{k})" if t == "f32" else f"{fn}({expr}, v{k})"
    shape = _bshape(*(o.shape for o in ops if isinstance(o, WH)))
    out = _new(be.rt, shape, x.dtype)
    return ew(be.rt, T.fix(x.dtype, expr), ops, out, HELPERS)


def run_nan_to_num(be, x: WH, nan, posinf, neginf):
    if T.st(x.dtype) != "f32":
        return be.run("copy", (x,), {})
    ops = [x, Scalar(nan, "f32"), Scalar(posinf, "f32"), Scalar(neginf, "f32")]
    expr = "select(select(v0, select(v3, v2, v0 > 0.0), _isinf(v0)), v1, _isnan(v0))"
    out = _new(be.rt, x.shape, x.dtype)
    return ew(be.rt, T.fix(x.dtype, expr), ops, out, HELPERS)
