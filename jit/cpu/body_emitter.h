// The body of a CPU kernel's loops: the expressions of one loop kernel (jit/loop/loop_kernel.h)
// evaluated for `lanes` elements at once (1: a scalar loop), loaded from and stored to the
// operands' current positions, with an optional AVX-512 tail mask. The one switch over
// expression ops of the CPU target, shared by pointwise kernels (render.cpp) and the element
// passes of row and column kernels (render_reduce.h emit_body).
//
// A template over the emitter `E`: asmjit's Compiler (KernelCompiler, virtual registers and its
// register allocator) or the fast path's RecordingAssembler (recording_assembler.h), so the
// same emission code, and the same instructions, serve both. What the recorder does not do (a
// call: sin/cos's huge-argument reduction) throws RecordingAssembler::Unsupported.
#pragma once
#include <asmjit/x86.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "jit/cpu/math.h"
#include "jit/cpu/philox_emitter.h"
#include "jit/cpu/render.h"
#include "jit/cpu/vec_emitter.h"
#include "runtime/error.h"

namespace kiln::jit {

inline bool is64(DType t) { return t == DType::Float64 || t == DType::Int64; }

namespace body_detail {
namespace x86 = asmjit::x86;
namespace Inst = asmjit::x86::Inst;
using asmjit::imm;
using asmjit::InstId;
using asmjit::Label;

// The expressions of one loop body, evaluated for `lanes` elements (1: a scalar loop), with an
// optional AVX-512 tail mask: the one switch over expression ops of the CPU target.
template <class E>
class BodyEmitter {
 public:
  // `first`: the element of the iteration this body computes, counted from `cur` (a copy of an
  // unrolled body reads and writes its contiguous operands `first` elements further on).
  BodyEmitter(EmitContextT<E>& ctx, int lanes, const LoopKernel& k,
              const std::vector<InnerLayout>& layout, const std::vector<x86::Gp>& cur,
              x86::Gp params, const x86::KReg* tail, bool streaming = false, int first = 0)
      : ctx_(ctx),
        cc_(ctx.cc),
        n_(lanes),
        f_(ctx, lanes),
        d_(ctx, lanes),
        x4_(ctx, 4),
        k_(k),
        layout_(layout),
        cur_(cur),
        params_(params),
        tail_(tail),
        streaming_(streaming),
        first_(first),
        vals_(ctx.body_values) {
    if (ctx.body_open) fail("cpu kernel: a loop body started inside another");
    ctx.body_open = true;
  }
  ~BodyEmitter() { ctx_.body_open = false; }
  BodyEmitter(const BodyEmitter&) = delete;
  BodyEmitter& operator=(const BodyEmitter&) = delete;

  void emit() {
    vals_.assign(k_.exprs.size(), BodyVal{});
    for (size_t i = 0; i < k_.exprs.size(); ++i) eval(static_cast<int32_t>(i));
    emit_stores(nullptr);
  }

  // A row kernel's body (render_reduce.h, emit_body): what `want` and the stores marked in
  // `store` need, presets taken as given.
  std::vector<x86::Vec> emit_partial(const std::vector<uint8_t>& want,
                                     const std::vector<x86::Vec>& preset,
                                     const std::vector<uint8_t>& store) {
    const size_t ne = k_.exprs.size();
    vals_.assign(ne, BodyVal{});
    std::vector<uint8_t>& need = ctx_.body_need;
    need.assign(want.begin(), want.end());
    need.resize(ne, 0);
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      if (store[j]) need[k_.stores[j]] = 1;
    for (size_t i = ne; i-- > 0;) {
      if (!need[i] || (i < preset.size() && preset[i].isValid())) continue;
      const Expr& e = k_.exprs[i];
      for (int32_t o : {e.a, e.b, e.c})
        if (o >= 0) need[o] = 1;
    }
    std::vector<x86::Vec> out(ne);
    for (size_t i = 0; i < ne; ++i) {
      if (i < preset.size() && preset[i].isValid()) {
        vals_[i].v = preset[i];
      } else if (need[i]) {
        eval(static_cast<int32_t>(i));
      }
      if (k_.exprs[i].type != DType::Bool) out[i] = vals_[i].v;
    }
    emit_stores(&store);
    return out;
  }

 private:
  void emit_stores(const std::vector<uint8_t>* which) {
    for (int32_t j = 0; j < k_.num_outputs(); ++j) {
      if (which != nullptr && !(*which)[j]) continue;
      const int32_t id = k_.stores[j];
      const DType t = k_.exprs[id].type;
      if (t == DType::Bool) {
        store_bool(cur_[j], disp(j), id);
        continue;
      }
      on(t, [&](auto& o) {
        if (streaming_ && o.bytes() >= 16)
          o.store_streaming(x86::ptr(cur_[j], disp(j)), vals_[id].v);
        else
          o.store(x86::ptr(cur_[j], disp(j)), vals_[id].v, tail_);
        return 0;
      });
    }
  }

  bool kmask() const { return ctx_.isa == JitIsa::Avx512; }
  bool vex() const { return ctx_.isa != JitIsa::Sse2; }
  // The byte displacement of this body's elements in operand j (0 for a broadcast operand).
  int32_t disp(int j) const {
    if (layout_[j] != InnerLayout::Contiguous) return 0;
    return first_ * static_cast<int32_t>(itemsize(k_.operand_dtype(j)));
  }
  // Runs fn with the emitter of t's lane width: Float32 and Int32 on the float emitter, Float64
  // and Int64 on the double one (integers are bits in the same registers).
  template <class Fn>
  std::invoke_result_t<Fn, AsmVecOps<float, E>&> on(DType t, Fn fn) {
    if (is64(t)) return fn(d_);
    return fn(f_);
  }
  x86::Vec new_vec(int bytes) { return AsmVecOps<float, E>::new_vec_of(cc_, bytes); }
  x86::Vec copy_of(x86::Vec v, int bytes) {
    x86::Vec d = new_vec(bytes);
    cc_.emit(vex() ? Inst::kIdVmovdqa : Inst::kIdMovdqa, d, v);
    return d;
  }
  void emit2(InstId vex_id, InstId sse_id, x86::Vec d, x86::Vec a, x86::Vec b) {
    if (vex()) {
      cc_.emit(vex_id, d, a, b);
    } else {
      if (d.id() != a.id()) cc_.emit(Inst::kIdMovdqa, d, a);
      cc_.emit(sse_id, d, b);
    }
  }

  // ---- masks ----
  AsmMask mask(int32_t id, int width) {
    BodyVal& v = vals_[id];
    if (kmask()) return AsmMask{v.k, {}};
    const int w = width == 8 ? 1 : 0;
    if (!v.has[w]) {
      v.m[w] = w ? widen32(v.m[0]) : narrow64(v.m[1]);
      v.has[w] = true;
    }
    return AsmMask{{}, v.m[w]};
  }
  void set_mask(int32_t id, AsmMask m, int width) {
    BodyVal& v = vals_[id];
    if (kmask()) {
      v.k = m.k;
    } else {
      v.m[width == 8] = m.v;
      v.has[width == 8] = true;
    }
  }
  int mask_width_available(int32_t id) const { return kmask() || vals_[id].has[0] ? 4 : 8; }

  // N lanes of 32 bits -> N lanes of 64 bits, sign-extended (Int32 -> Int64, or a mask).
  x86::Vec widen32(x86::Vec src) {
    x86::Vec d = new_vec(n_ * 8);
    if (vex()) {
      cc_.emit(Inst::kIdVpmovsxdq, d, src);
    } else {
      x86::Vec s = copy_of(src, 16);
      cc_.emit(Inst::kIdPsrad, s, imm(31));
      cc_.emit(Inst::kIdMovdqa, d, src);
      cc_.emit(Inst::kIdPunpckldq, d, s);
    }
    return d;
  }
  // N lanes of 64 bits -> their low 32 bits (Int64 -> Int32 wraps, or a mask).
  x86::Vec narrow64(x86::Vec src) {
    x86::Vec d = new_vec(n_ * 4);
    if (kmask()) {
      cc_.emit(Inst::kIdVpmovqd, d, src);
    } else if (n_ * 8 == 32) {
      x86::Vec hi = cc_.newXmm();
      cc_.emit(Inst::kIdVextracti128, hi, src, imm(1));
      cc_.emit(Inst::kIdVshufps, d, src.xmm(), hi, imm(0x88));
    } else {
      cc_.emit(vex() ? Inst::kIdVpshufd : Inst::kIdPshufd, d, src, imm(0x08));
    }
    return d;
  }

  // ---- Bool operands: bytes 0 / 1 in memory ----
  void load_bool(int32_t id, const x86::Gp& base, int32_t off, bool broadcast) {
    if (broadcast || n_ == 1) {  // one byte, every lane
      x86::Gp g = cc_.newGpd();
      cc_.movzx(g, x86::byte_ptr(base, off));
      cc_.neg(g);  // 0 / 1 -> 0 / all ones
      if (kmask()) {
        AsmMask m;
        m.k = cc_.newKw();
        cc_.kmovw(m.k, g);
        set_mask(id, m, 4);
        return;
      }
      x86::Vec x = cc_.newXmm();
      cc_.emit(vex() ? Inst::kIdVmovd : Inst::kIdMovd, x, g);
      cc_.emit(vex() ? Inst::kIdVpshufd : Inst::kIdPshufd, x, x, imm(0));
      AsmMask m;
      m.v = x;
      if (n_ * 4 == 32) {
        m.v = cc_.newYmm();
        cc_.emit(Inst::kIdVpbroadcastd, m.v, x);
      }
      set_mask(id, m, 4);
      return;
    }
    x86::Vec x = cc_.newXmm();
    if (tail_ != nullptr) {
      cc_.k(*tail_).z().emit(Inst::kIdVmovdqu8, x, x86::xmmword_ptr(base, off));
    } else if (n_ == 2) {
      x86::Gp g = cc_.newGpd();
      cc_.movzx(g, x86::word_ptr(base, off));
      cc_.emit(vex() ? Inst::kIdVmovd : Inst::kIdMovd, x, g);
    } else if (n_ == 4) {
      cc_.emit(vex() ? Inst::kIdVmovd : Inst::kIdMovd, x, x86::dword_ptr(base, off));
    } else if (n_ == 8) {
      cc_.emit(vex() ? Inst::kIdVmovq : Inst::kIdMovq, x, x86::qword_ptr(base, off));
    } else {
      cc_.emit(Inst::kIdVmovdqu, x, x86::xmmword_ptr(base, off));
    }
    AsmMask m;
    if (kmask()) {
      m.k = cc_.newKw();
      cc_.emit(Inst::kIdVptestmb, m.k, x, x);
      set_mask(id, m, 4);
      return;
    }
    x86::Vec t = cc_.newXmm();  // 0 - b: 0 / 1 bytes -> 0 / 0xff
    emit2(Inst::kIdVpsubb, Inst::kIdPsubb, t, x4_.isplat(0), x);
    if (vex()) {
      m.v = new_vec(n_ * 4);
      cc_.emit(Inst::kIdVpmovsxbd, m.v, t);
    } else {
      cc_.emit(Inst::kIdPunpcklbw, t, t);
      cc_.emit(Inst::kIdPunpcklwd, t, t);
      m.v = t;
    }
    set_mask(id, m, 4);
  }

  void store_bool(const x86::Gp& base, int32_t off, int32_t id) {
    const x86::Vec ones = x4_.isplat(0x01010101);
    x86::Vec x = cc_.newXmm();
    if (kmask()) {
      cc_.k(mask(id, 4).k).z().emit(Inst::kIdVmovdqu8, x, ones);
    } else {
      const x86::Vec m = mask(id, 4).v;
      if (n_ * 4 == 32) {
        x86::Vec hi = cc_.newXmm();
        cc_.emit(Inst::kIdVextracti128, hi, m, imm(1));
        cc_.emit(Inst::kIdVpackssdw, x, m.xmm(), hi);
      } else {
        emit2(Inst::kIdVpackssdw, Inst::kIdPackssdw, x, m, m);
      }
      emit2(Inst::kIdVpacksswb, Inst::kIdPacksswb, x, x, x);
      emit2(Inst::kIdVpand, Inst::kIdPand, x, x, ones);
    }
    if (tail_ != nullptr) {
      cc_.k(*tail_).emit(Inst::kIdVmovdqu8, x86::xmmword_ptr(base, off), x);
    } else if (n_ <= 2) {
      x86::Gp g = cc_.newGpd();
      cc_.emit(vex() ? Inst::kIdVmovd : Inst::kIdMovd, g, x);
      if (n_ == 1)
        cc_.mov(x86::byte_ptr(base, off), g.r8());
      else
        cc_.mov(x86::word_ptr(base, off), g.r16());
    } else if (n_ == 4) {
      cc_.emit(vex() ? Inst::kIdVmovd : Inst::kIdMovd, x86::dword_ptr(base, off), x);
    } else if (n_ == 8) {
      cc_.emit(vex() ? Inst::kIdVmovq : Inst::kIdMovq, x86::qword_ptr(base, off), x);
    } else {
      cc_.emit(Inst::kIdVmovdqu, x86::xmmword_ptr(base, off), x);
    }
  }

  // ---- casts ----
  // Int64 <-> float lane by lane through general registers (AVX2 and SSE2 have no packed
  // instruction for them): cvtsi2ss / cvtsi2sd round to nearest even, cvttss2si / cvttsd2si
  // truncate and give INT64_MIN for NaN and out of range, as the eager cast's scalar code.
  x86::Vec via_gp(x86::Vec src, DType from, DType to) {
    const int fs = static_cast<int>(itemsize(from)), ts = static_cast<int>(itemsize(to));
    x86::Mem in = cc_.newStack(64, 64), out = cc_.newStack(64, 64);
    on(from, [&](auto& o) {
      o.store(in, src);
      return 0;
    });
    for (int l = 0; l < n_; ++l) {
      x86::Gp g = cc_.newGpq();
      x86::Mem src_l = in.cloneAdjusted(l * fs), dst_l = out.cloneAdjusted(l * ts);
      src_l.setSize(static_cast<uint32_t>(fs));
      dst_l.setSize(static_cast<uint32_t>(ts));
      if (from == DType::Int64) {
        x86::Xmm x = cc_.newXmm();
        cc_.mov(g, src_l);
        const bool f32 = to == DType::Float32;
        if (vex()) {
          cc_.vxorps(x, x, x);
          cc_.emit(f32 ? Inst::kIdVcvtsi2ss : Inst::kIdVcvtsi2sd, x, x, g);
          cc_.emit(f32 ? Inst::kIdVmovss : Inst::kIdVmovsd, dst_l, x);
        } else {
          cc_.xorps(x, x);
          cc_.emit(f32 ? Inst::kIdCvtsi2ss : Inst::kIdCvtsi2sd, x, g);
          cc_.emit(f32 ? Inst::kIdMovss : Inst::kIdMovsd, dst_l, x);
        }
      } else {
        const bool f32 = from == DType::Float32;
        cc_.emit(vex() ? (f32 ? Inst::kIdVcvttss2si : Inst::kIdVcvttsd2si)
                       : (f32 ? Inst::kIdCvttss2si : Inst::kIdCvttsd2si),
                 g, src_l);
        cc_.mov(dst_l, g);
      }
    }
    return on(to, [&](auto& o) { return o.load(out); });
  }

  void cast(int32_t id, int32_t a, DType from, DType to) {
    BodyVal& r = vals_[id];
    if (to == DType::Bool) {  // x != 0 (NaN is true)
      on(from, [&](auto& o) {
        if (is_floating(from))
          set_mask(id, o.ne(vals_[a].v, o.splat(0.0)), o.bytes() / n_);
        else
          set_mask(id, o.icmp(4, vals_[a].v, o.isplat(0)), o.bytes() / n_);
        return 0;
      });
      return;
    }
    if (from == DType::Bool) {  // 0 or 1
      r.v = on(to, [&](auto& o) {
        const AsmMask m = mask(a, o.bytes() / n_);
        return is_floating(to) ? o.select(m, o.splat(1.0), o.splat(0.0))
                               : o.select(m, o.isplat(1), o.isplat(0));
      });
      return;
    }
    const x86::Vec x = vals_[a].v;
    const x86::Vec d = new_vec(n_ * static_cast<int>(itemsize(to)));
    auto one = [&](InstId v_id, InstId s_id) {
      cc_.emit(vex() ? v_id : s_id, d, x);
      r.v = d;
    };
    using D = DType;
    if (from == D::Float32 && to == D::Float64) return one(Inst::kIdVcvtps2pd, Inst::kIdCvtps2pd);
    if (from == D::Float64 && to == D::Float32) return one(Inst::kIdVcvtpd2ps, Inst::kIdCvtpd2ps);
    if (from == D::Int32 && to == D::Float32) return one(Inst::kIdVcvtdq2ps, Inst::kIdCvtdq2ps);
    if (from == D::Int32 && to == D::Float64) return one(Inst::kIdVcvtdq2pd, Inst::kIdCvtdq2pd);
    if (from == D::Float32 && to == D::Int32) return one(Inst::kIdVcvttps2dq, Inst::kIdCvttps2dq);
    if (from == D::Float64 && to == D::Int32) return one(Inst::kIdVcvttpd2dq, Inst::kIdCvttpd2dq);
    if (from == D::Int32 && to == D::Int64) {
      r.v = widen32(x);
      return;
    }
    if (from == D::Int64 && to == D::Int32) {
      r.v = narrow64(x);
      return;
    }
    // Int64 <-> floats: AVX-512DQ has them packed.
    if (kmask()) {
      if (from == D::Int64)
        return one(to == D::Float32 ? Inst::kIdVcvtqq2ps : Inst::kIdVcvtqq2pd, 0);
      return one(from == D::Float32 ? Inst::kIdVcvttps2qq : Inst::kIdVcvttpd2qq, 0);
    }
    r.v = via_gp(x, from, to);
  }

  void eval(int32_t i) {
    const Expr& e = k_.exprs[i];
    const DType t = e.type;
    BodyVal& r = vals_[i];
    switch (e.op) {
      case ExprOp::Load: {
        const int32_t operand = k_.num_outputs() + e.index;
        const bool bcast = layout_[operand] == InnerLayout::Broadcast;
        if (t == DType::Bool) return load_bool(i, cur_[operand], disp(operand), bcast);
        const x86::Mem m = x86::ptr(cur_[operand], disp(operand));
        r.v = on(t, [&](auto& o) { return bcast ? o.load_broadcast(m) : o.load(m, tail_); });
        return;
      }
      case ExprOp::Const:
        if (t == DType::Bool) {
          AsmMask m;
          if (kmask()) {
            m.k = cc_.newKw();
            if (e.ivalue)
              cc_.kxnorw(m.k, m.k, m.k);
            else
              cc_.kxorw(m.k, m.k, m.k);
          } else {
            m.v = f_.isplat(e.ivalue ? -1 : 0);
          }
          return set_mask(i, m, 4);
        }
        r.v =
            on(t, [&](auto& o) { return is_floating(t) ? o.splat(e.value) : o.isplat(e.ivalue); });
        return;
      case ExprOp::Param:
        r.v = on(t, [&](auto& o) { return o.load_broadcast(x86::ptr(params_, e.index * 8)); });
        return;
      case ExprOp::RandUniform: {  // the hidden operand after the kernel's: the linear index
        x86::Gp index = cur_[k_.num_operands()];
        if (first_ != 0) {  // a copy of an unrolled body draws for its own elements
          x86::Gp moved = cc_.newInt64("index");
          cc_.lea(moved, x86::ptr(index, first_));
          index = moved;
        }
        r.v = on(t, [&](auto& o) { return emit_rand_uniform(o, cc_, index, params_, e.index); });
        return;
      }
      case ExprOp::Cast:
        return cast(i, e.a, k_.exprs[e.a].type, t);
      case ExprOp::And:
      case ExprOp::Or:
      case ExprOp::Not: {
        const int w = mask_width_available(e.a);
        on(w == 8 ? DType::Float64 : DType::Float32, [&](auto& o) {
          const AsmMask a = mask(e.a, w);
          set_mask(i,
                   e.op == ExprOp::Not   ? o.mask_not(a)
                   : e.op == ExprOp::And ? o.mask_and(a, mask(e.b, w))
                                         : o.mask_or(a, mask(e.b, w)),
                   w);
          return 0;
        });
        return;
      }
      default:
        break;
    }
    if (expr_is_compare(e.op)) {
      const DType ot = k_.exprs[e.a].type;
      on(ot, [&](auto& o) {
        const x86::Vec a = vals_[e.a].v, b = vals_[e.b].v;
        AsmMask m;
        if (is_floating(ot)) {
          switch (e.op) {
            case ExprOp::Lt:
              m = o.lt(a, b);
              break;
            case ExprOp::Le:
              m = o.le(a, b);
              break;
            case ExprOp::Gt:
              m = o.gt(a, b);
              break;
            case ExprOp::Ge:
              m = o.ge(a, b);
              break;
            case ExprOp::Eq:
              m = o.eq(a, b);
              break;
            default:
              m = o.ne(a, b);
              break;
          }
        } else {
          static constexpr int pred[] = {1, 2, 6, 5, 0, 4};  // Lt Le Gt Ge Eq Ne
          m = o.icmp(pred[static_cast<int>(e.op) - static_cast<int>(ExprOp::Lt)], a, b);
        }
        set_mask(i, m, o.bytes() / n_);
        return 0;
      });
      return;
    }
    r.v = on(t, [&](auto& o) { return is_floating(t) ? eval_float(o, e) : eval_int(o, e); });
  }

  template <class O>
  x86::Vec eval_float(O& o, const Expr& e) {
    const x86::Vec A = e.a >= 0 ? vals_[e.a].v : x86::Vec(),
                   B = e.b >= 0 ? vals_[e.b].v : x86::Vec();
    switch (e.op) {
      case ExprOp::Neg:
        return o.bit_xor(A, o.splat(-0.0));
      case ExprOp::Abs:  // x < 0 ? -x : x (eager keeps -0 as is)
        return o.select(o.lt(A, o.splat(0.0)), o.bit_xor(A, o.splat(-0.0)), A);
      case ExprOp::Sqrt:
        return o.sqrt(A);
      case ExprOp::Rsqrt:
        return o.div(o.splat(1.0), o.sqrt(A));
      case ExprOp::Reciprocal:
        return o.div(o.splat(1.0), A);
      case ExprOp::Square:
        return o.mul(A, A);
      case ExprOp::Relu:  // x < 0 ? 0 : x (NaN passes)
        return o.select(o.lt(A, o.splat(0.0)), o.splat(0.0), A);
      case ExprOp::Sign:  // (0 < x) - (x < 0): NaN and -0 give +0
        return o.select(o.gt(A, o.splat(0.0)), o.splat(1.0),
                        o.select(o.lt(A, o.splat(0.0)), o.splat(-1.0), o.splat(0.0)));
      case ExprOp::Add:
        return o.add(A, B);
      case ExprOp::Sub:
        return o.sub(A, B);
      case ExprOp::Mul:
        return o.mul(A, B);
      case ExprOp::Div:
        return o.div(A, B);
      case ExprOp::Pow:                         // PowF / PowScalarF: the shared vector math
        if (k_.exprs[e.b].op == ExprOp::Const)  // the exponent's class known now (PowScalarF's)
          return vecmath::pow_scalar(o, A, k_.exprs[e.b].value);
        return vecmath::pow(o, A, B);
      case ExprOp::Maximum:
      case ExprOp::Minimum: {  // NaN in a, else NaN in b, else the larger (smaller)
        x86::Vec r =
            e.op == ExprOp::Maximum ? o.select(o.lt(A, B), B, A) : o.select(o.lt(B, A), B, A);
        r = o.select(o.unord(B, B), B, r);
        return o.select(o.unord(A, A), A, r);
      }
      case ExprOp::Select:
        return o.select(mask(e.a, o.bytes() / n_), vals_[e.b].v, vals_[e.c].v);
      case ExprOp::Floor:
        return o.round(A, 1);
      case ExprOp::Ceil:
        return o.round(A, 2);
      case ExprOp::Round:
        return o.round(A, 0);
      default:
        if (expr_is_transcendental(e.op))
          return emit_math(o, e.op, A, e.op == ExprOp::Exp && exp_input_may_be_masked(k_, e.a));
        fail("cpu kernel: no rendering for expression op {}", expr_op_name(e.op));
    }
  }

  // int_pow(b, e) (ops/cpu/pointwise_functors.h) lane by lane: square and multiply while any
  // lane's exponent has bits left (a loop in the kernel, as many rounds as the largest exponent
  // has bits), wrapping products (b^e modulo 2^w whatever the grouping); a negative exponent
  // gives 1 for b == 1, +-1 for b == -1 (by e's parity), else 0.
  template <class O>
  x86::Vec int_pow(O& o, x86::Vec b0, x86::Vec e0) {
    const x86::Vec zero = o.isplat(0), one = o.isplat(1);
    const AsmMask neg = o.icmp(1, e0, zero);
    x86::Vec r = o.new_vec(), b = o.new_vec(), e = o.new_vec();
    const InstId mov = vex() ? Inst::kIdVmovaps : Inst::kIdMovaps;
    cc_.emit(mov, r, one);
    cc_.emit(mov, b, b0);
    cc_.emit(mov, e, o.select(neg, zero, e0));
    Label loop = cc_.newLabel(), done = cc_.newLabel();
    auto any_lane = [&](AsmMask m) {  // a general register with a bit per lane of this emitter
      x86::Gp bits = cc_.newGpd();
      if (kmask())
        cc_.kmovw(bits, m.k);
      else
        cc_.emit(vex() ? (O::kDouble ? Inst::kIdVmovmskpd : Inst::kIdVmovmskps)
                       : (O::kDouble ? Inst::kIdMovmskpd : Inst::kIdMovmskps),
                 bits, m.v);
      cc_.test(bits, imm((1 << n_) - 1));
    };
    any_lane(o.icmp(4, e, zero));
    cc_.jz(done);
    cc_.bind(loop);
    const AsmMask odd = o.icmp(4, o.bit_and(e, one), zero);
    cc_.emit(mov, r, o.select(odd, o.imul(r, b), r));
    cc_.emit(mov, e, o.shr(e, 1));
    cc_.emit(mov, b, o.imul(b, b));
    any_lane(o.icmp(4, e, zero));
    cc_.jnz(loop);
    cc_.bind(done);
    const x86::Vec minus_one = o.isplat(-1);
    const x86::Vec odd_e = o.select(o.icmp(4, o.bit_and(e0, one), zero), minus_one, one);
    const x86::Vec neg_r =
        o.select(o.icmp(0, b0, one), one, o.select(o.icmp(0, b0, minus_one), odd_e, zero));
    return o.select(neg, neg_r, r);
  }

  // Integers wrap in two's complement, as the eager functors (wrap_add, ...).
  template <class O>
  x86::Vec eval_int(O& o, const Expr& e) {
    const x86::Vec A = e.a >= 0 ? vals_[e.a].v : x86::Vec(),
                   B = e.b >= 0 ? vals_[e.b].v : x86::Vec();
    const x86::Vec zero = o.isplat(0);
    switch (e.op) {
      case ExprOp::Neg:
        return o.isub(zero, A);
      case ExprOp::Abs:
        return o.select(o.icmp(1, A, zero), o.isub(zero, A), A);
      case ExprOp::Square:
        return o.imul(A, A);
      case ExprOp::Relu:
        return o.select(o.icmp(1, A, zero), zero, A);
      case ExprOp::Sign:
        return o.select(o.icmp(6, A, zero), o.isplat(1),
                        o.select(o.icmp(1, A, zero), o.isplat(-1), zero));
      case ExprOp::Add:
        return o.iadd(A, B);
      case ExprOp::Sub:
        return o.isub(A, B);
      case ExprOp::Mul:
        return o.imul(A, B);
      case ExprOp::Pow:
        return int_pow(o, A, B);
      case ExprOp::Maximum:
        return o.select(o.icmp(1, A, B), B, A);
      case ExprOp::Minimum:
        return o.select(o.icmp(1, B, A), B, A);
      case ExprOp::Select:
        return o.select(mask(e.a, o.bytes() / n_), vals_[e.b].v, vals_[e.c].v);
      default:
        fail("cpu kernel: no integer rendering for expression op {}", expr_op_name(e.op));
    }
  }

  EmitContextT<E>& ctx_;
  E& cc_;
  int n_;
  AsmVecOps<float, E> f_;
  AsmVecOps<double, E> d_;
  AsmVecOps<float, E> x4_;  // xmm-sized constants (Bool bytes)
  const LoopKernel& k_;
  const std::vector<InnerLayout>& layout_;
  const std::vector<x86::Gp>& cur_;
  x86::Gp params_;
  const x86::KReg* tail_;
  bool streaming_;
  int first_;
  std::vector<BodyVal>& vals_;  // ctx_.body_values
};

}  // namespace body_detail

using body_detail::BodyEmitter;

// One body of `lanes` lanes for a row or column kernel (render_reduce.h, render_cols.h):
// evaluates what `want` and the outputs marked in `store` need, taking `preset[i]` (where valid)
// for expression i instead of evaluating it (row values computed before the loop), and stores
// the marked outputs at `cur`. Returns each numeric expression's register (invalid where not
// evaluated). `streaming`: full-vector stores are non-temporal (aligned rows; the function ends
// with a fence). `first`: the body's elements start that many elements after `cur` in contiguous
// operands (a column kernel's next vector).
template <class E>
std::vector<asmjit::x86::Vec> emit_body(
    EmitContextT<E>& ctx, int lanes, const LoopKernel& k, const std::vector<InnerLayout>& layout,
    const std::vector<asmjit::x86::Gp>& cur, asmjit::x86::Gp params, const asmjit::x86::KReg* tail,
    const std::vector<uint8_t>& want, const std::vector<asmjit::x86::Vec>& preset,
    const std::vector<uint8_t>& store, bool streaming = false, int first = 0) {
  return BodyEmitter<E>(ctx, lanes, k, layout, cur, params, tail, streaming, first)
      .emit_partial(want, preset, store);
}

// The operands (outputs first, then inputs, as `cur` is indexed) that emit_body reads (its
// Loads) or writes (the outputs `store` marks) when it evaluates `want` taking the expressions
// `known` marks as given: a pass makes cursors for these only, live over that pass (the
// recorder's linear scan, reg_alloc.h, sees one interval per register).
inline std::vector<uint8_t> body_operands(const LoopKernel& k, const std::vector<uint8_t>& want,
                                          const std::vector<uint8_t>& known,
                                          const std::vector<uint8_t>& store) {
  const size_t ne = k.exprs.size();
  std::vector<uint8_t> need(want), used(static_cast<size_t>(k.num_operands()), 0);
  for (int32_t j = 0; j < k.num_outputs(); ++j)
    if (store[j]) need[k.stores[j]] = used[j] = 1;
  for (size_t i = ne; i-- > 0;) {
    if (!need[i] || known[i]) continue;
    const Expr& e = k.exprs[i];
    if (e.op == ExprOp::Load) used[k.num_outputs() + e.index] = 1;
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) need[o] = 1;
  }
  return used;
}

// New cursor registers at `from` for the operands `used` marks (body_operands), the others none:
// each pass walks registers of its own, live over that pass only.
template <class E>
std::vector<asmjit::x86::Gp> pass_cursors(E& cc, const std::vector<uint8_t>& used,
                                          const std::vector<asmjit::x86::Gp>& from) {
  std::vector<asmjit::x86::Gp> cur(used.size());
  for (size_t j = 0; j < used.size(); ++j)
    if (used[j]) {
      cur[j] = cc.newIntPtr("cur");
      cc.mov(cur[j], from[j]);
    }
  return cur;
}

}  // namespace kiln::jit
