import { describe, expect, it } from "vitest";
import { figureFindings, type RecordedResult } from "../../../src/kinds/plan-and-solve/answer-checks.js";

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";
const circle: RecordedResult[] = [
  { tool: "calculator", arguments: { expression: "pi * 5^2" }, result: 78.53981633974483, item: "Compute the area" },
  { tool: "calculator", arguments: { expression: "2 * pi * 5" }, result: 31.41592653589793, item: "Compute the circumference" },
];
const SHOP = "What do 3 books at $19.99 each cost with 8% tax?";
const shop: RecordedResult[] = [
  { tool: "calculator", arguments: { expression: "3 * 19.99" }, result: 59.97, item: "Compute the subtotal" },
  { tool: "calculator", arguments: { expression: "59.97 * 0.08" }, result: 4.7976, item: "Compute the tax" },
  { tool: "calculator", arguments: { expression: "59.97 + 4.7976" }, result: 64.7676, item: "Compute the total" },
];
const ZH = "半径为5米的圆的面积和周长是多少？";

/** Each wrong answer of the circle question, with a word its finding names. */
const WRONG: [string, string, RecordedResult[], string, string][] = [
  ["no π", CIRCLE, circle, "The area is 25 m² and the circumference 31.42 m.", "25"],
  ["πr", CIRCLE, circle, "The area is 78.54 m² and the circumference 15.71 m.", "15.71"],
  ["2πr²", CIRCLE, circle, "The area is 157.08 m² and the circumference 31.42 m.", "157.08"],
  ["the diameter", CIRCLE, circle, "The area is 78.54 m² and the circumference 10 m.", "10"],
  ["a question number", CIRCLE, circle, "The area is 5 m² and the circumference 31.42 m.", "5 m²"],
  ["cm for m", CIRCLE, circle, "The area is 78.54 cm² and the circumference 31.42 cm.", "cm²"],
  ["the unit swap", CIRCLE, circle, "The area is 78.54 m and the circumference 31.42 m².", "an area"],
  ["a wrong conversion", CIRCLE, circle, "The area is 78.54 m² (that is 7,854 cm²) and the circumference 31.42 m.", "7,854"],
  ["the labelled swap", CIRCLE, circle, "Area: 31.42 m² / Circumference: 78.54 m", "31.42"],
  ["made up", CIRCLE, [], "The area is 78.54 m² and the circumference 31.42 m.", "no tool was called"],
  ["Chinese 100", ZH, circle, "面积为100平方米，周长为31.42米", "100"],
  ["Chinese swap", ZH, circle, "面积为31.42平方米，周长为78.54米", "31.42"],
  ["the total swap", SHOP, shop, "The subtotal is $64.77 and the total $59.97.", "64.77"],
  ["tax misquoted", SHOP, shop, "Tax is $4.90, so the total is $64.87.", "4.90"],
  ["a swap after a comma", SHOP, shop, "Subtotal $59.97, tax $64.77, total $4.80.", "64.77"],
];

const RIGHT: [string, string, RecordedResult[], string][] = [
  ["in feet", CIRCLE, circle, "The circumference is about 103.1 ft and the area 78.54 m²."],
  ["25π", CIRCLE, circle, "A = 25π = 78.54 m² and C = 31.42 m"],
  ["roughly", CIRCLE, circle, "The area is roughly 80 m² and the circumference 31.4 m."],
  ["restating", CIRCLE, circle, "For a radius of 5 m, the area is 78.5 m² and the circumference 31.42 m (3,141.6 cm)."],
  ["shopping", SHOP, shop, "3 books at $19.99 with 8% tax = $64.77"],
  ["shopping parts", SHOP, shop, "Subtotal $59.97, tax $4.80, total $64.77."],
  ["Chinese", ZH, circle, "半径5米的圆，面积约为78.54平方米，周长约为31.42米。"],
  ["Chinese cm", ZH, circle, "面积为785,398平方厘米，周长为3142厘米。"],
];

describe("provenance of figures", () => {
  it.each(WRONG)("finds %s", (_, question, recorded, answer, names) => {
    const findings = figureFindings(answer, question, recorded);
    expect(findings.join("\n")).toContain(names);
  });
  it.each(RIGHT)("passes %s", (_, question, recorded, answer) => {
    expect(figureFindings(answer, question, recorded)).toEqual([]);
  });
});
