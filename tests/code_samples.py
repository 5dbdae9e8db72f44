"""Real source files in each language the definition parser knows, shared by the tests of
definitions and of chunk plans. Line numbers in those tests refer to these texts."""

from __future__ import annotations

SAMPLES: dict[str, str] = {
    "circle.py": r'''"""Shapes."""
import math


# A shape with an area.
@dataclass
class Circle:
    """A circle."""

    radius: float

    def area(self) -> float:
        return math.pi * self.radius**2

    # Scaled copies.
    def scaled(self, k: float) -> "Circle":
        def grow(r: float) -> float:
            return r * k

        return Circle(grow(self.radius))


def total(shapes: list[Circle]) -> float:
    return sum(s.area() for s in shapes)


def report(shapes):
    def line(s):
        return f"{s.radius}: {s.area()}"

    lines = [line(s) for s in shapes]
    return "\n".join(lines)
''',
    "circle.js": r"""// Shapes.
import { pi } from "./math.js";

/** A circle. */
export class Circle {
  constructor(radius) {
    this.radius = radius;
  }

  area() {
    return pi * this.radius ** 2;
  }

  scaled(k) {
    const grow = (r) => r * k;
    return new Circle(grow(this.radius));
  }
}

export function report(shapes) {
  function line(s) {
    return `${s.radius}: ${s.area()}`;
  }
  return shapes.map(line).join("\n");
}

export const total = (shapes) =>
  shapes.reduce((sum, s) => sum + s.area(), 0);
""",
    "shapes.ts": r"""import { pi } from "./math";

export interface Shape {
  area(): number;
}

export enum Kind {
  Circle,
  Square,
}

// A circle.
@sealed
export class Circle implements Shape {
  constructor(private radius: number) {}

  area(): number {
    return pi * this.radius ** 2;
  }

  scaled(k: number): Circle {
    const grow = (r: number): number => r * k;
    return new Circle(grow(this.radius));
  }
}

export namespace Report {
  export function lines(shapes: Shape[]): string[] {
    return shapes.map((s) => `${s.area()}`);
  }
}
""",
    "Counter.tsx": r"""import { useState } from "react";

type Props = { start: number };

export function Counter({ start }: Props) {
  const [n, setN] = useState(start);
  const increment = () => {
    setN(n + 1);
  };
  function reset() {
    setN(start);
  }
  return (
    <div>
      <button onClick={increment}>{n}</button>
      <button onClick={reset}>reset</button>
    </div>
  );
}

export const Label = ({ text }: { text: string }) => <span>{text}</span>;
""",
    "tree.go": r"""package tree

import "sort"

// Tree keeps sorted keys.
type Tree struct {
	keys []int
}

// Insert adds a key.
func (t *Tree) Insert(k int) {
	less := func(i int) bool {
		return t.keys[i] >= k
	}
	i := sort.Search(len(t.keys), less)
	t.keys = append(t.keys, 0)
	copy(t.keys[i+1:], t.keys[i:])
	t.keys[i] = k
}

func (t *Tree) Len() int { return len(t.keys) }

func New(keys ...int) *Tree {
	t := &Tree{}
	for _, k := range keys {
		t.Insert(k)
	}
	return t
}
""",
    "stack.rs": r"""//! A stack.
use std::fmt;

/// A stack of numbers.
#[derive(Debug, Default)]
pub struct Stack {
    items: Vec<i32>,
}

impl Stack {
    /// Pushes a number.
    pub fn push(&mut self, x: i32) {
        self.items.push(x);
    }

    pub fn sum_if(&self, min: i32) -> i32 {
        let keep = |x: &&i32| **x >= min;
        self.items.iter().filter(keep).sum()
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{:?}", self.items)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pushes() {
        let mut s = super::Stack::default();
        s.push(1);
        assert_eq!(s.sum_if(0), 1);
    }
}
""",
    "Shapes.java": r"""package shapes;

import java.util.List;

/** A circle. */
@SuppressWarnings("unused")
public class Circle {
    private final double radius;

    public Circle(double radius) {
        this.radius = radius;
    }

    // Its area.
    public double area() {
        return Math.PI * radius * radius;
    }

    public double total(List<Circle> all) {
        java.util.function.ToDoubleFunction<Circle> f = c -> {
            return c.area();
        };
        return all.stream().mapToDouble(f).sum();
    }

    static class Unit extends Circle {
        Unit() { super(1); }
    }
}

interface Shape {
    double area();
}
""",
    "stack.c": r"""#include <stdlib.h>

/* A stack of ints. */
struct stack {
    int *items;
    int size;
};

typedef struct stack stack_t;

// Pushes x.
static void push(struct stack *s, int x) {
    s->items = realloc(s->items, (s->size + 1) * sizeof(int));
    s->items[s->size++] = x;
}

int sum(const struct stack *s) {
    int total = 0;
    for (int i = 0; i < s->size; i++) {
        total += s->items[i];
    }
    return total;
}
""",
    "shapes.cpp": r"""#include <vector>

namespace shapes {

// A circle.
class Circle {
 public:
  explicit Circle(double r) : r_(r) {}

  double area() const { return 3.14159 * r_ * r_; }

  double scaled_area(double k) const {
    auto grow = [k](double r) { return r * k; };
    return Circle(grow(r_)).area();
  }

 private:
  double r_;
};

template <typename T>
T total(const std::vector<T>& xs) {
  T sum{};
  for (const auto& x : xs) sum += x;
  return sum;
}

}  // namespace shapes

int main() {
  shapes::Circle c(2);
  return c.area() > 0 ? 0 : 1;
}
""",
}
