//! Evaluation: the program runs over sub-blocks of `SUB` rows, every instruction as one
//! typed loop, so intermediates stay in L1/L2 cache (the "fusion" numexpr does too), and
//! nothing is allocated once a thread's scratch has warmed up.

use std::cell::RefCell;
use std::sync::Mutex;

use crate::column::{Column, ColumnMut, ColumnRef};
use crate::compile::Cmp;
use crate::compile::{Inst, Op, Program, Src};
use crate::dtype::{DType, Scalar};
use crate::error::{ErrorKind, ExprError};
use crate::kernels::{cmp_padded, compare, float_fn, map1, map2, select, Bits, CastFrom, Elem, Float, Num, Opnd};

/// Rows per sub-block (every temporary holds this many).
pub const SUB: usize = 4096;
/// Rows per task of [`Program::eval_par`].
pub const PAR_ROWS: usize = 64 * SUB;

/// Reusable per-thread buffers for the temporaries of a program.
#[derive(Default, Debug)]
pub struct Scratch {
    slots: Vec<Column>,
}

impl Scratch {
    pub fn new() -> Self {
        Self::default()
    }

    fn prepare(&mut self, prog: &Program) {
        if self.slots.len() < prog.slots.len() {
            self.slots.resize_with(prog.slots.len(), || Column::Bool(Vec::new()));
        }
        for (slot, &dt) in self.slots.iter_mut().zip(&prog.slots) {
            slot.reset(dt, SUB);
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

pub(crate) fn cast_scalar(s: Scalar, to: DType) -> Scalar {
    macro_rules! go {
        ($t:ty) => {
            <$t>::from_scalar(s).to_scalar()
        };
    }
    match to {
        DType::Bool => go!(bool),
        DType::I8 => go!(i8),
        DType::I16 => go!(i16),
        DType::I32 => go!(i32),
        DType::I64 => go!(i64),
        DType::U8 => go!(u8),
        DType::U16 => go!(u16),
        DType::U32 => go!(u32),
        DType::U64 => go!(u64),
        DType::F32 => go!(f32),
        DType::F64 => go!(f64),
        DType::Bytes(_) => s,
    }
}

pub(crate) fn py_floordiv_f64(a: f64, b: f64) -> f64 {
    a.floordiv(b)
}

pub(crate) fn py_mod_f64(a: f64, b: f64) -> f64 {
    a.pymod(b)
}

/// Everything an instruction reads: inputs, constants and the temporaries of this block.
struct Ctx<'a> {
    prog: &'a Program,
    inputs: &'a [ColumnRef<'a>],
    slots: &'a [Column],
    start: usize,
    len: usize,
}

impl Ctx<'_> {
    #[inline]
    fn get<T: Elem>(&self, reg: usize) -> Opnd<'_, T> {
        let r = &self.prog.regs[reg];
        match &r.src {
            Src::Input(i) => {
                let s = T::of_ref(&self.inputs[*i]).expect("input dtype checked");
                if s.len() == 1 {
                    Opnd::C(s[0])
                } else {
                    Opnd::S(&s[self.start..self.start + self.len])
                }
            }
            Src::Const(c) => Opnd::C(T::from_scalar(*c)),
            Src::Temp(k) => Opnd::S(&T::of_col(&self.slots[*k]).expect("slot dtype")[..self.len]),
            Src::ConstBytes(_) => unreachable!("bytes constants only feed BytesCmp"),
        }
    }

    /// A bytes operand: (width, rows or one broadcast value).
    fn bytes(&self, reg: usize) -> (usize, &[u8], bool) {
        let r = &self.prog.regs[reg];
        match (&r.src, r.dtype) {
            (Src::Input(i), DType::Bytes(w)) => {
                let ColumnRef::Bytes { data, .. } = self.inputs[*i] else { unreachable!("input dtype checked") };
                if data.len() == w {
                    (w, data, true)
                } else {
                    (w, &data[self.start * w..(self.start + self.len) * w], false)
                }
            }
            (Src::ConstBytes(b), _) => (b.len(), b, true),
            _ => unreachable!("bytes operands are inputs or constants"),
        }
    }
}

macro_rules! with_num {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::U16 => {
                type $T = u16;
                $body
            }
            DType::U32 => {
                type $T = u32;
                $body
            }
            DType::U64 => {
                type $T = u64;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            other => unreachable!("numeric op on {other}"),
        }
    };
}

macro_rules! with_any {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::Bool => { type $T = bool; $body }
            other => with_num!(other, $T => $body),
        }
    };
}

macro_rules! with_bits {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::Bool => {
                type $T = bool;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::U16 => {
                type $T = u16;
                $body
            }
            DType::U32 => {
                type $T = u32;
                $body
            }
            DType::U64 => {
                type $T = u64;
                $body
            }
            other => unreachable!("bit op on {other}"),
        }
    };
}

macro_rules! with_float {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            other => unreachable!("float op on {other}"),
        }
    };
}

macro_rules! cast_to {
    ($ctx:expr, $a:expr, $S:ty, $to:expr, $out:expr) => {{
        let x = $ctx.get::<$S>($a);
        match $to {
            DType::I8 => map1(x, <i8>::of_mut($out).unwrap(), <i8 as CastFrom<$S>>::cast_from),
            DType::I16 => map1(x, <i16>::of_mut($out).unwrap(), <i16 as CastFrom<$S>>::cast_from),
            DType::I32 => map1(x, <i32>::of_mut($out).unwrap(), <i32 as CastFrom<$S>>::cast_from),
            DType::I64 => map1(x, <i64>::of_mut($out).unwrap(), <i64 as CastFrom<$S>>::cast_from),
            DType::U8 => map1(x, <u8>::of_mut($out).unwrap(), <u8 as CastFrom<$S>>::cast_from),
            DType::U16 => map1(x, <u16>::of_mut($out).unwrap(), <u16 as CastFrom<$S>>::cast_from),
            DType::U32 => map1(x, <u32>::of_mut($out).unwrap(), <u32 as CastFrom<$S>>::cast_from),
            DType::U64 => map1(x, <u64>::of_mut($out).unwrap(), <u64 as CastFrom<$S>>::cast_from),
            DType::F32 => map1(x, <f32>::of_mut($out).unwrap(), <f32 as CastFrom<$S>>::cast_from),
            DType::F64 => map1(x, <f64>::of_mut($out).unwrap(), <f64 as CastFrom<$S>>::cast_from),
            other => unreachable!("cast to {other}"),
        }
    }};
}

/// Run one instruction over the current block into `out`.
fn exec(inst: &Inst, ctx: &Ctx<'_>, out: &mut ColumnMut<'_>) -> Result<(), ExprError> {
    let [a, b, c] = inst.args;
    let dt = |r: usize| ctx.prog.regs[r].dtype;
    let to = ctx.prog.regs[inst.out].dtype;
    macro_rules! bin {
        ($with:ident, $f:expr) => {
            $with!(dt(a), T => map2(ctx.get::<T>(a), ctx.get::<T>(b), T::of_mut(out).unwrap(), $f))
        };
    }
    macro_rules! un {
        ($with:ident, $f:expr) => {
            $with!(dt(a), T => map1(ctx.get::<T>(a), T::of_mut(out).unwrap(), $f))
        };
    }
    match inst.op {
        Op::Cast => match dt(a) {
            DType::Bool => cast_to!(ctx, a, bool, to, out),
            DType::I8 => cast_to!(ctx, a, i8, to, out),
            DType::I16 => cast_to!(ctx, a, i16, to, out),
            DType::I32 => cast_to!(ctx, a, i32, to, out),
            DType::I64 => cast_to!(ctx, a, i64, to, out),
            DType::U8 => cast_to!(ctx, a, u8, to, out),
            DType::U16 => cast_to!(ctx, a, u16, to, out),
            DType::U32 => cast_to!(ctx, a, u32, to, out),
            DType::U64 => cast_to!(ctx, a, u64, to, out),
            DType::F32 => cast_to!(ctx, a, f32, to, out),
            DType::F64 => cast_to!(ctx, a, f64, to, out),
            DType::Bytes(_) => unreachable!("bytes are never cast"),
        },
        Op::Truth => with_num!(dt(a), T => map1(ctx.get::<T>(a), bool::of_mut(out).unwrap(), |x: T| x.truth())),
        Op::Neg => un!(with_num, |x: T| x.neg()),
        Op::Abs => un!(with_num, |x: T| Num::abs(x)),
        Op::Square => un!(with_num, |x: T| x.mul(x)),
        Op::Not | Op::BitNot => un!(with_bits, |x: T| x.not()),
        Op::Add => bin!(with_num, |x: T, y: T| x.add(y)),
        Op::Sub => bin!(with_num, |x: T, y: T| x.sub(y)),
        Op::Mul => bin!(with_num, |x: T, y: T| x.mul(y)),
        Op::Div => bin!(with_float, |x: T, y: T| x.div(y)),
        Op::FloorDiv => bin!(with_num, |x: T, y: T| x.floordiv(y)),
        Op::Mod => bin!(with_num, |x: T, y: T| x.pymod(y)),
        Op::Fmod => bin!(with_num, |x: T, y: T| x.fmod(y)),
        Op::Min => bin!(with_num, |x: T, y: T| x.min_nan(y)),
        Op::Max => bin!(with_num, |x: T, y: T| x.max_nan(y)),
        Op::Atan2 => bin!(with_float, |x: T, y: T| Float::atan2(x, y)),
        Op::F2(f) => bin!(with_float, |x: T, y: T| x.f2(f, y)),
        Op::Fmin => bin!(with_num, |x: T, y: T| x.fmin(y)),
        Op::Fmax => bin!(with_num, |x: T, y: T| x.fmax(y)),
        Op::Pow => with_num!(dt(a), T => {
            let e = ctx.get::<T>(b);
            if dt(b).is_int() {
                let neg = match e {
                    Opnd::S(s) => s.iter().any(|v| v.below_zero()),
                    Opnd::C(v) => v.below_zero(),
                };
                if neg {
                    return Err(ExprError::new(ErrorKind::Eval, "Integers to negative integer powers are not allowed")
                        .at(&ctx.prog.text, 0, ctx.prog.text.len()));
                }
            }
            map2(ctx.get::<T>(a), e, T::of_mut(out).unwrap(), |x: T, y: T| x.power(y))
        }),
        Op::And => bin!(with_bits, |x: T, y: T| x.and(y)),
        Op::Or => bin!(with_bits, |x: T, y: T| x.or(y)),
        Op::Xor => bin!(with_bits, |x: T, y: T| x.xor(y)),
        Op::Cmp(op) => {
            with_any!(dt(a), T => compare(op, ctx.get::<T>(a), ctx.get::<T>(b), bool::of_mut(out).unwrap()))
        }
        Op::F1(f) => with_float!(dt(a), T => float_fn(f, ctx.get::<T>(a), T::of_mut(out).unwrap())),
        Op::IsNan => with_float!(dt(a), T => map1(ctx.get::<T>(a), bool::of_mut(out).unwrap(), |x: T| x.is_nan())),
        Op::IsInf => with_float!(dt(a), T => map1(ctx.get::<T>(a), bool::of_mut(out).unwrap(), |x: T| x.is_inf())),
        Op::IsFinite => {
            with_float!(dt(a), T => map1(ctx.get::<T>(a), bool::of_mut(out).unwrap(), |x: T| x.is_finite()))
        }
        Op::Where => {
            let cond = ctx.get::<bool>(a);
            with_any!(to, T => select(cond, ctx.get::<T>(b), ctx.get::<T>(c), T::of_mut(out).unwrap()))
        }
        Op::BytesCmp(op) => {
            let (wa, xa, ca) = ctx.bytes(a);
            let (wb, xb, cb) = ctx.bytes(b);
            let o = bool::of_mut(out).unwrap();
            for (i, o) in o.iter_mut().enumerate() {
                let ra = if ca { xa } else { &xa[i * wa..(i + 1) * wa] };
                let rb = if cb { xb } else { &xb[i * wb..(i + 1) * wb] };
                let ord = cmp_padded(ra, rb);
                *o = match op {
                    Cmp::Lt => ord.is_lt(),
                    Cmp::Le => ord.is_le(),
                    Cmp::Gt => ord.is_gt(),
                    Cmp::Ge => ord.is_ge(),
                    Cmp::Eq => ord.is_eq(),
                    Cmp::Ne => ord.is_ne(),
                };
            }
        }
    }
    Ok(())
}

/// Copy (or broadcast) register `reg` of the current block into `out`.
fn copy_reg(ctx: &Ctx<'_>, reg: usize, out: &mut ColumnMut<'_>) {
    let dt = ctx.prog.regs[reg].dtype;
    if let DType::Bytes(w) = dt {
        let (_, data, one) = ctx.bytes(reg);
        let ColumnMut::Bytes { data: o, .. } = out else { unreachable!("output dtype checked") };
        for (i, row) in o.chunks_exact_mut(w).enumerate() {
            let src = if one { data } else { &data[i * w..(i + 1) * w] };
            row.fill(0);
            let n = src.len().min(w);
            row[..n].copy_from_slice(&src[..n]);
        }
        return;
    }
    with_any!(dt, T => map1(ctx.get::<T>(reg), T::of_mut(out).unwrap(), |x: T| x))
}

impl Program {
    fn check(&self, inputs: &[ColumnRef<'_>], out: &ColumnMut<'_>) -> Result<usize, ExprError> {
        let n = out.len();
        if inputs.len() != self.inputs.len() {
            return Err(ExprError::new(
                ErrorKind::Input,
                format!(
                    "expected {} input column(s) ({}), got {}",
                    self.inputs.len(),
                    self.inputs.join(", "),
                    inputs.len()
                ),
            ));
        }
        for ((col, name), &dt) in inputs.iter().zip(&self.inputs).zip(&self.input_dtypes) {
            if col.dtype() != dt {
                return Err(ExprError::new(
                    ErrorKind::Input,
                    format!("column '{name}' is {}, the program was compiled for {dt}", col.dtype()),
                )
                .column(name));
            }
            if col.len() != n && col.len() != 1 {
                return Err(ExprError::new(
                    ErrorKind::Input,
                    format!("column '{name}' has {} rows, the output {n} (lengths must match or be 1)", col.len()),
                )
                .column(name));
            }
        }
        if out.dtype() != self.dtype() {
            return Err(ExprError::new(
                ErrorKind::Input,
                format!("output column is {}, the result is {}", out.dtype(), self.dtype()),
            ));
        }
        Ok(n)
    }

    /// Evaluate over one block into `out` (its length is the number of rows; every input has
    /// that many rows, or one row broadcast to all), with the calling thread's scratch.
    pub fn eval_into(&self, inputs: &[ColumnRef<'_>], out: ColumnMut<'_>) -> Result<(), ExprError> {
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => self.eval_with(&mut s, inputs, out),
            Err(_) => self.eval_with(&mut Scratch::new(), inputs, out),
        })
    }

    /// [`Program::eval_into`] with an explicit scratch (allocation-free once warmed up).
    pub fn eval_with(
        &self,
        scratch: &mut Scratch,
        inputs: &[ColumnRef<'_>],
        mut out: ColumnMut<'_>,
    ) -> Result<(), ExprError> {
        let n = self.check(inputs, &out)?;
        scratch.prepare(self);
        let direct = self.insts.last().is_some_and(|i| i.out == self.root);
        let mut start = 0;
        while start < n {
            let len = SUB.min(n - start);
            for (k, inst) in self.insts.iter().enumerate() {
                let last = direct && k + 1 == self.insts.len();
                if last {
                    let ctx = Ctx { prog: self, inputs, slots: &scratch.slots, start, len };
                    exec(inst, &ctx, &mut out.slice_mut(start, start + len))?;
                } else {
                    let Src::Temp(slot) = self.regs[inst.out].src else { unreachable!("results live in slots") };
                    let mut col = std::mem::replace(&mut scratch.slots[slot], Column::Bool(Vec::new()));
                    let r = {
                        let ctx = Ctx { prog: self, inputs, slots: &scratch.slots, start, len };
                        exec(inst, &ctx, &mut col.as_mut().slice_mut(0, len))
                    };
                    scratch.slots[slot] = col;
                    r?;
                }
            }
            if !direct {
                let ctx = Ctx { prog: self, inputs, slots: &scratch.slots, start, len };
                copy_reg(&ctx, self.root, &mut out.slice_mut(start, start + len));
            }
            start += len;
        }
        Ok(())
    }

    /// Evaluate into a new column (`len` rows: needed when every input is broadcast or there
    /// are none; otherwise the inputs' length).
    pub fn eval(&self, inputs: &[ColumnRef<'_>], out: &mut Column) -> Result<(), ExprError> {
        let n =
            inputs.iter().map(|c| c.len()).find(|&l| l != 1).or(inputs.first().map(|c| c.len())).unwrap_or(out.len());
        out.reset(self.dtype(), n);
        self.eval_into(inputs, out.as_mut())
    }

    /// Evaluate a long in-memory input with `nthreads` threads (each takes tasks of
    /// [`PAR_ROWS`] rows in turn; results are identical to [`Program::eval_into`]).
    pub fn eval_par(&self, inputs: &[ColumnRef<'_>], out: ColumnMut<'_>, nthreads: usize) -> Result<(), ExprError> {
        let n = self.check(inputs, &out)?;
        let nthreads = nthreads.max(1).min(n.div_ceil(PAR_ROWS));
        if nthreads <= 1 {
            return self.eval_into(inputs, out);
        }
        let tasks: Vec<(usize, ColumnMut<'_>)> =
            out.into_chunks(PAR_ROWS).into_iter().enumerate().map(|(i, c)| (i * PAR_ROWS, c)).collect();
        let queue = Mutex::new(tasks.into_iter());
        let first_err: Mutex<Option<ExprError>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..nthreads {
                s.spawn(|| loop {
                    let Some((start, part)) = queue.lock().unwrap_or_else(|p| p.into_inner()).next() else { break };
                    let end = start + part.len();
                    let sliced: Vec<ColumnRef<'_>> =
                        inputs.iter().map(|c| if c.len() == 1 { *c } else { c.slice(start, end) }).collect();
                    if let Err(e) = self.eval_into(&sliced, part) {
                        first_err.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                        break;
                    }
                });
            }
        });
        match first_err.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
